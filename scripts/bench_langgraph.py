"""The peer flow for scripts/bench-peers.sh: LangGraph, master -> N members
fanned out with Send -> master review, against an OpenAI-compatible server.

Prints one JSON line: wall_ms, peak_rss_kib, drafts. Modes: `sync`
(graph.invoke, LangGraph's default executor, as a new user writes it) and
`async` (graph.ainvoke with the models' async calls).
"""

import argparse
import asyncio
import json
import operator
import re
import resource
import time
from typing import Annotated, TypedDict

from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send


class State(TypedDict):
    task: str
    assignments: list
    drafts: Annotated[list, operator.add]
    answer: str


class Member(TypedDict):
    name: str
    task: str


def build(llm, members, use_async):
    roster = "\n".join(f"- {m}: writes one part" for m in members)
    plan_prompt = (
        "<roster>\n" + roster + "\n</roster>\n\n<task>\n{task}\n</task>\n\n"
        "Split this task among the members of your roster. Reply with ASSIGN lines."
    )

    def parse(text):
        return [
            {"name": m.group(1), "task": m.group(2)}
            for m in re.finditer(r"^ASSIGN:([^:]+):(.*)$", text, re.M)
        ]

    def review_prompt(state):
        board = "\n".join(state["drafts"])
        return (
            f"<task>\n{state['task']}\n</task>\n\nRound 1 of at most 1 is over. "
            f"This is the board:\n\n{board}\n\nReply DONE and the answer."
        )

    if use_async:

        async def plan(state):
            r = await llm.ainvoke(plan_prompt.format(task=state["task"]))
            return {"assignments": parse(r.content)}

        async def member(m: Member):
            r = await llm.ainvoke(f"You are {m['name']}.\n<assignment>\n{m['task']}\n</assignment>")
            return {"drafts": [f"{m['name']}: {r.content}"]}

        async def review(state):
            r = await llm.ainvoke(review_prompt(state))
            return {"answer": r.content}

    else:

        def plan(state):
            r = llm.invoke(plan_prompt.format(task=state["task"]))
            return {"assignments": parse(r.content)}

        def member(m: Member):
            r = llm.invoke(f"You are {m['name']}.\n<assignment>\n{m['task']}\n</assignment>")
            return {"drafts": [f"{m['name']}: {r.content}"]}

        def review(state):
            r = llm.invoke(review_prompt(state))
            return {"answer": r.content}

    def fan_out(state):
        return [Send("member", a) for a in state["assignments"]]

    g = StateGraph(State)
    g.add_node("plan", plan)
    g.add_node("member", member)
    g.add_node("review", review)
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", fan_out, ["member"])
    g.add_edge("member", "review")
    g.add_edge("review", END)
    return g.compile()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--members", type=int, required=True)
    p.add_argument("--mode", choices=["sync", "async"], default="sync")
    a = p.parse_args()
    llm = ChatOpenAI(base_url=a.url, api_key="loopback", model="loopback", max_retries=2)
    members = [f"m{i:04}" for i in range(a.members)]
    graph = build(llm, members, a.mode == "async")
    start = {"task": "Benchmark: each member writes one short part.", "assignments": [],
             "drafts": [], "answer": ""}
    t = time.perf_counter()
    if a.mode == "async":
        out = asyncio.run(graph.ainvoke(start))
    else:
        out = graph.invoke(start)
    wall = time.perf_counter() - t
    print(json.dumps({
        "mode": a.mode,
        "members": a.members,
        "drafts": len(out["drafts"]),
        "wall_ms": wall * 1e3,
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }))


if __name__ == "__main__":
    main()
