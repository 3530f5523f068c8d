-- Version 2 of agent-store-postgres: each distinct attachment once, by the
-- SHA-256 of its bytes (messages hold references to it), and which
-- conversations use each, so that deleting the last of them deletes it.
-- Never edit this file once released; add a new one.

CREATE TABLE media (
    sha256 TEXT COLLATE "C" PRIMARY KEY,
    mime_type TEXT NOT NULL,
    size BIGINT NOT NULL,
    data BYTEA NOT NULL
);

CREATE TABLE conversation_media (
    conversation TEXT COLLATE "C" NOT NULL REFERENCES conversations (name) ON DELETE CASCADE,
    sha256 TEXT COLLATE "C" NOT NULL REFERENCES media (sha256),
    PRIMARY KEY (conversation, sha256)
);
CREATE INDEX conversation_media_by_hash ON conversation_media (sha256);
