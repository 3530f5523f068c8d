"""An independent MCP client for the agent-app tests: the official Python
SDK (`mcp` from PyPI) starts `agentry mcp` over stdio, lists its tools and
calls some, and prints what it saw as one JSON object on stdout.

Usage: sdk_client.py AGENTRY CONFIG HOME
"""

import json
import sys

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def text_of(result):
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def main(agentry, config, home):
    params = StdioServerParameters(
        command=agentry,
        args=["mcp", "--config", config, "--tools", "math"],
        env={"AGENTRY_HOME": home},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            listed = await session.list_tools()
            good = await session.call_tool("calculator", {"expression": "17 * 23"})
            invalid = await session.call_tool("calculator", {"expr": "1 + 1"})
            unknown = await session.call_tool("no_such_tool", {})
    print(json.dumps({
        "server": init.server_info.name,
        "tools": [{"name": tool.name, "schema": tool.input_schema} for tool in listed.tools],
        "good": {"is_error": bool(good.is_error), "text": text_of(good)},
        "invalid": {"is_error": bool(invalid.is_error), "text": text_of(invalid)},
        "unknown": {"is_error": bool(unknown.is_error), "text": text_of(unknown)},
    }))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])
