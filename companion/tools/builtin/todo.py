"""todo — a task list for this conversation: add, list, complete, clear."""

from __future__ import annotations

SCHEMA = {
    "type": "function",
    "name": "todo",
    "description": (
        "Keep a task list for this conversation. action 'add' adds `text`; 'list' shows the "
        "list; 'complete' ticks off `item` (its number or some of its words); 'clear' empties "
        "the list."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["add", "list", "complete", "clear"]},
            "text": {"type": "string", "description": "The task to add (for 'add')."},
            "item": {
                "type": "string",
                "description": "For 'complete': the task's number in the list or words from it.",
            },
        },
        "required": ["action"],
        "additionalProperties": False,
    },
}
TOOLSET = "core"
RISK = "read"

ANNOUNCE = "Let me look at our list."
HEARTBEAT = ["Still sorting the list..."]
COMPLETE = "The list is updated."
FAIL = "I couldn't change the list."
EXPRESSIONS = {"focus": "thinking", "done": "happy", "fail": "confused"}

MAX_ITEMS = 100
MAX_TEXT = 500
ACTIONS = ("add", "list", "complete", "clear")


async def execute(args: dict, ctx) -> str:
    todos: list[dict] = ctx.session.todos
    action = str(args.get("action", "")).strip().lower() if isinstance(args, dict) else ""
    if action == "add":
        return _add(todos, args.get("text"), ctx)
    if action == "list":
        return _list(todos)
    if action == "complete":
        return _complete(todos, args.get("item"), ctx)
    if action == "clear":
        count = len(todos)
        todos.clear()
        return f"I cleared the list ({_tasks(count)} removed)." if count else "The list was already empty."
    return ctx.fail(f"I can only {', '.join(ACTIONS[:-1])} or {ACTIONS[-1]} tasks.")


def _add(todos: list[dict], text: object, ctx) -> str:
    if not isinstance(text, str) or not text.strip():
        return ctx.fail("Tell me what the task is, and I'll add it.")
    text = " ".join(text.split())
    if len(text) > MAX_TEXT:
        return ctx.fail(f"That task is too long; keep it under {MAX_TEXT} characters.")
    if len(todos) >= MAX_ITEMS:
        return ctx.fail(f"The list already has {MAX_ITEMS} tasks; complete or clear some first.")
    todos.append({"text": text, "done": False})
    open_count = sum(1 for t in todos if not t["done"])
    return f"Added task {len(todos)}: {text}. {_tasks(open_count).capitalize()} still open."


def _list(todos: list[dict]) -> str:
    if not todos:
        return "The list is empty."
    lines = [f"{i}. [{'x' if t['done'] else ' '}] {t['text']}" for i, t in enumerate(todos, 1)]
    open_count = sum(1 for t in todos if not t["done"])
    return f"{_tasks(len(todos)).capitalize()}, {open_count} open:\n" + "\n".join(lines)


def _complete(todos: list[dict], item: object, ctx) -> str:
    if not todos:
        return ctx.fail("The list is empty, so there is nothing to tick off.")
    if isinstance(item, int | float) and not isinstance(item, bool):
        item = str(int(item))
    if not isinstance(item, str) or not item.strip():
        return ctx.fail("Tell me which task to tick off: its number or some of its words.")
    wanted = item.strip().lstrip("#")
    if wanted.isdigit():
        number = int(wanted)
        if not 1 <= number <= len(todos):
            return ctx.fail(f"There is no task {number}; the list has {_tasks(len(todos))}.")
        matches = [todos[number - 1]]
    else:
        words = wanted.lower()
        matches = [t for t in todos if words in t["text"].lower()]
        open_matches = [t for t in matches if not t["done"]]
        matches = open_matches or matches
    if not matches:
        return ctx.fail(f"No task matches {wanted!r}.")
    if len(matches) > 1:
        return ctx.fail(
            f"{len(matches)} tasks match {wanted!r}; tell me its number instead."
        )
    task = matches[0]
    if task["done"]:
        return f"{task['text']!r} was already done."
    task["done"] = True
    left = sum(1 for t in todos if not t["done"])
    return f"Ticked off: {task['text']}. {_tasks(left).capitalize()} left."


def _tasks(count: int) -> str:
    if count == 0:
        return "no tasks"
    return "1 task" if count == 1 else f"{count} tasks"
