"""Loads Relay's Ragas exports with Ragas' own EvaluationDataset and checks them.

Usage: python ragas_check.py SINGLE_TURN.jsonl MULTI_TURN.jsonl

Run by TestRagasExportEndToEnd (internal/app/ragas_test.go) with the Python of a
virtual environment where ragas is installed (RELAY_RAGAS_PYTHON; .ci/run makes
one). Exits non-zero, saying why, when Ragas refuses a file or a sample is not
what docs/api.md "Ragas export" describes.
"""

import re
import sys

from ragas import EvaluationDataset, MultiTurnSample, SingleTurnSample
from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage

RESIDUE = re.compile(r"turn\d+(?:search|image|news|video|ref|file)\d+|\\ue2|[\ue200-\ue2ff]|\s[.,;:!?]")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check_single(path):
    ds = EvaluationDataset.from_jsonl(path)
    if len(ds) == 0 or ds.get_sample_type() is not SingleTurnSample:
        fail(f"{path}: {len(ds)} samples of {ds.get_sample_type() if len(ds) else None}, want single-turn samples")
    for s in ds:
        if not isinstance(s.user_input, str) or not s.user_input:
            fail(f"{path}: user_input {s.user_input!r}")
        if not isinstance(s.response, str) or RESIDUE.search(s.response):
            fail(f"{path}: response {s.response!r} keeps a citation marker")
        if s.retrieved_contexts is not None:
            if len(s.retrieved_contexts) < 2 or not all(isinstance(c, str) and c for c in s.retrieved_contexts):
                fail(f"{path}: retrieved_contexts {s.retrieved_contexts!r}, want one string per passage")
            if any("Anchor:" in c for c in s.retrieved_contexts):
                fail(f"{path}: a retrieved context keeps file_search's headers")
    return len(ds)


def check_multi(path):
    ds = EvaluationDataset.from_jsonl(path)
    if len(ds) == 0 or ds.get_sample_type() is not MultiTurnSample:
        fail(f"{path}: want multi-turn samples")
    calls = 0
    for s in ds:
        msgs = s.user_input
        if not isinstance(msgs[0], HumanMessage) or not isinstance(msgs[-1], AIMessage):
            fail(f"{path}: conversation {[type(m).__name__ for m in msgs]}")
        for m in msgs:
            if isinstance(m, AIMessage):
                if RESIDUE.search(m.content):
                    fail(f"{path}: ai message {m.content!r} keeps a citation marker")
                for c in m.tool_calls or []:
                    if not isinstance(c, ToolCall) or not isinstance(c.args, dict):
                        fail(f"{path}: tool call {c!r}, want args as a dict")
                    calls += 1
            elif not isinstance(m, (HumanMessage, ToolMessage)):
                fail(f"{path}: message {m!r}")
    if calls == 0:
        fail(f"{path}: no tool call")
    return len(ds)


def main():
    if len(sys.argv) != 3:
        fail("usage: ragas_check.py SINGLE_TURN.jsonl MULTI_TURN.jsonl")
    n = check_single(sys.argv[1])
    m = check_multi(sys.argv[2])
    print(f"ok: EvaluationDataset loaded {n} single-turn and {m} multi-turn samples")


if __name__ == "__main__":
    main()
