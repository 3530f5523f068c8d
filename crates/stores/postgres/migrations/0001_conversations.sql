-- Version 1 of agent-store-postgres: conversations, their messages, their
-- summaries (compaction) and their run checkpoints. Never edit this file
-- once released: sqlx's migrator records its checksum in every database
-- it set up and refuses to start when the two differ. Add a new file.
--
-- Names and timestamps compare byte by byte (COLLATE "C"), whatever the
-- database's locale: `list` orders like the SQLite store, and RFC 3339 UTC
-- timestamps sort chronologically as text. Timestamps are the text of
-- ConversationMeta (an imported conversation keeps its own). Messages and
-- checkpoints are JSON *text*, not JSONB: JSONB would reorder object keys
-- (tool-call arguments are sent back to the model as stored) and cannot hold
-- "\u0000", so text is what makes a reload identical.

CREATE TABLE conversations (
    name TEXT COLLATE "C" PRIMARY KEY,
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    provider TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    cache_read_tokens BIGINT NOT NULL DEFAULT 0,
    cache_write_tokens BIGINT NOT NULL DEFAULT 0,
    reasoning_tokens BIGINT NOT NULL DEFAULT 0,
    cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
    -- Messages stored; also the `seq` of the next one.
    message_count BIGINT NOT NULL DEFAULT 0,
    user_turns BIGINT NOT NULL DEFAULT 0,
    -- Turns appended; also the `turn` of the next one.
    turn_count BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX conversations_by_update ON conversations (updated_at DESC, name);

-- Every message ever appended, numbered from 0 within its conversation.
CREATE TABLE messages (
    conversation TEXT COLLATE "C" NOT NULL REFERENCES conversations (name) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    turn BIGINT NOT NULL,
    role TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (conversation, seq)
);

-- Every summary a compaction stored: the newest (highest id) is current and
-- stands for the messages with `seq` below `summarised`.
CREATE TABLE summaries (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    conversation TEXT COLLATE "C" NOT NULL REFERENCES conversations (name) ON DELETE CASCADE,
    summarised BIGINT NOT NULL,
    content TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX summaries_by_conversation ON summaries (conversation, id);

-- At most one run checkpoint per conversation (opaque JSON).
CREATE TABLE checkpoints (
    conversation TEXT COLLATE "C" PRIMARY KEY REFERENCES conversations (name) ON DELETE CASCADE,
    saved_at TEXT NOT NULL,
    body TEXT NOT NULL
);
