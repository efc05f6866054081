"""Every SQL statement is the store's (ARCHITECTURE.md, "Stores"): no module of webapp/ outside
webapp/store/ imports a database driver, runs a statement or holds SQL text. The `drivers` import
contract checks the imports too; this also catches SQL handed to a store as text."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "webapp" / "store"
DRIVERS = {"sqlite3", "aiosqlite", "asyncpg", "psycopg", "psycopg2"}
# Calls that run SQL (the store's `SqlRunner`, DB-API, aiosqlite, asyncpg); `execute` only with text.
RUNS_SQL = {"fetchall", "fetchone", "fetchval", "fetchrow", "executemany", "execute_fetchall", "transaction"}
SQL = re.compile(r"\b(SELECT\s.+\sFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+TABLE)\b", re.S)


def modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted((ROOT / "webapp").rglob("*.py")):
        if STORE not in path.parents:
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def crossings(path: Path, tree: ast.Module) -> Iterator[str]:
    where = path.relative_to(ROOT)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                if name.split(".")[0] in DRIVERS:
                    yield f"{where}:{node.lineno} imports {name}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            text_arg = bool(node.args) and isinstance(node.args[0], ast.Constant | ast.JoinedStr)
            if name in RUNS_SQL or (name == "execute" and text_arg):
                yield f"{where}:{node.lineno} calls .{name}()"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
            yield f"{where}:{node.lineno} holds SQL: {node.value[:60]!r}"


def test_no_module_outside_the_store_touches_a_database_driver_or_sql() -> None:
    found = [line for path, tree in modules() for line in crossings(path, tree)]
    assert not found, "SQL belongs in webapp/store/ (a domain method of EventStore):\n" + "\n".join(found)


def test_the_check_sees_what_it_forbids() -> None:
    """The check itself finds each kind of crossing (so a pass above means something)."""
    source = '''
import sqlite3
from asyncpg import connect
async def f(store, tx):
    await store.fetchall("SELECT 1")
    await tx.execute(f"UPDATE debates SET status = ?")
    async with store.transaction():
        pass
QUERY = "SELECT id FROM debates"
'''
    found = list(crossings(ROOT / "webapp" / "example.py", ast.parse(source)))
    kinds = sorted(line.split(" ", 1)[1].split(":")[0] for line in found)
    assert kinds == ["calls .execute()", "calls .fetchall()", "calls .transaction()", "holds SQL", "holds SQL",
                     "imports asyncpg", "imports sqlite3"], found
