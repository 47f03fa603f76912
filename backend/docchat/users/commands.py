"""`docchat users ...`: user administration from the server's shell (no admin account needed).

The same functions as the API's admin routes, so the rules (last administrator, audit log)
hold here too; the audit log names the actor "command line".
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from docchat.kit.errors import DocchatError
from docchat.kit.pagination import MAX_LIMIT, PageParams
from docchat.users import administration
from docchat.users.models import Role
from docchat.users.schemas import AdminUserCreate

Action = Callable[[AsyncSession, argparse.Namespace], Awaitable[str]]


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """The `users` command and its actions (returned: the wiring adds those needing more than
    the database, such as `delete`)."""
    users = commands.add_parser("users", help="create, list, deactivate, reset and delete users")
    actions = users.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="list users (newest first)")
    listing.add_argument("--search", help="part of the email or display name")
    listing.add_argument("--limit", type=int, default=MAX_LIMIT)
    create = actions.add_parser(
        "create", help="add a user; prints a temporary password to hand over"
    )
    create.add_argument("email")
    create.add_argument("--name", default="", help="display name")
    create.add_argument("--role", choices=[role.value for role in Role], default=Role.user.value)
    for name, help_text in (
        ("deactivate", "end every session and API key of a user; they cannot log in"),
        ("reactivate", "let a deactivated user log in again"),
        ("reset-password", "print a temporary password the user must change at login"),
    ):
        actions.add_parser(name, help=help_text).add_argument("email")
    role = actions.add_parser("set-role", help="make a user an administrator or a user")
    role.add_argument("email")
    role.add_argument("role", choices=[role.value for role in Role])
    return actions


async def _list(session: AsyncSession, args: argparse.Namespace) -> str:
    users, total = await administration.search(
        session, PageParams(limit=args.limit), query=args.search
    )
    lines = [
        f"{user.email:40} {user.role:6} {'active' if user.is_active else 'inactive':8} "
        f"{user.created_at:%Y-%m-%d}"
        for user in users
    ]
    return "\n".join([*lines, f"{len(users)} of {total} users"])


async def _create(session: AsyncSession, args: argparse.Namespace) -> str:
    data = AdminUserCreate(email=args.email, display_name=args.name, role=Role(args.role))
    user, password = await administration.create(session, None, data, None)
    return f"created {user.email} ({user.role}); temporary password: {password}"


async def _deactivate(session: AsyncSession, args: argparse.Namespace) -> str:
    user = await administration.get_by_email(session, args.email)
    await administration.set_active(session, None, user, False, None)
    return f"{user.email} is deactivated: its sessions and API keys no longer work"


async def _reactivate(session: AsyncSession, args: argparse.Namespace) -> str:
    user = await administration.get_by_email(session, args.email)
    await administration.set_active(session, None, user, True, None)
    return f"{user.email} can log in again"


async def _reset_password(session: AsyncSession, args: argparse.Namespace) -> str:
    user = await administration.get_by_email(session, args.email)
    password = await administration.reset_password(session, None, user, None)
    return f"temporary password for {user.email}: {password} (to be changed at the next login)"


async def _set_role(session: AsyncSession, args: argparse.Namespace) -> str:
    user = await administration.get_by_email(session, args.email)
    await administration.set_role(session, None, user, Role(args.role), None)
    return f"{user.email} is now {user.role}"


ACTIONS: dict[str, Action] = {
    "list": _list,
    "create": _create,
    "deactivate": _deactivate,
    "reactivate": _reactivate,
    "reset-password": _reset_password,
    "set-role": _set_role,
}


async def run(args: argparse.Namespace, database_url: str) -> tuple[bool, str]:
    """(succeeded, what to print); a refused action (unknown email, last admin) is not a crash."""
    from docchat.db import create_engine, create_sessionmaker, session_scope

    engine = create_engine(database_url, pool_size=1)
    try:
        async with session_scope(create_sessionmaker(engine)) as session:
            return True, await ACTIONS[args.action](session, args)
    except DocchatError as exc:
        return False, exc.message
    except ValidationError as exc:
        return False, "; ".join(str(error["msg"]) for error in exc.errors())
    finally:
        await engine.dispose()
