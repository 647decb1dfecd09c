"""Who is calling: one :class:`Caller` for every feature that names or keys on the caller.

A caller is a person (``user``), the program acting for them (``client``) and the one agent
of that program (``session``):

- signed in with ``--auth-issuer``: the token's ``sub`` and its ``client_id`` (or ``azp``),
  as the issuer wrote them (a self-declared ``clientInfo`` never overrides a token);
- inside Jupyter Server (``{base_url}/mcp``): the user Jupyter authenticated (with JupyterHub,
  the Hub user) and the ``clientInfo`` name;
- over stdio, with ``--mcp-token`` or without a token: the local OS user running the server
  (everyone who reaches it acts as them) and the ``clientInfo`` name the client gave
  (``initialize``, or on a stateless 2026-07-28 request the client info it carries);
- the session: ``stdio`` for the one peer of a stdio server, the ``mcp-session-id`` of an
  HTTP session, or the agent handle a request carries in ``_meta["io.jupyter-mcp/agent"]``.
  A stateless request has no session, so the server names one: every result of a stateless
  request carries the handle in force under that key (a new one when the request brought
  none), and a client that passes it back on its next requests is one agent across them.
  A handle also keeps one agent one across its HTTP sessions (a detached run followed from
  the next connection).

The audit log, the notebooks' histories, the presence in JupyterLab and the approvals name
the caller by :meth:`Caller.record` and :attr:`Caller.display`; tasks and detached runs
belong to :attr:`Caller.owner`, which two agents of one person never share.
"""

from __future__ import annotations

import contextlib
import contextvars
import getpass
import hashlib
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from jupyter_mcp_server._calls.connections import STDIO_CONNECTION, client_name_of, session_of

#: Where a request's ``_meta`` names its agent, and a stateless result says the handle in force.
AGENT_META_KEY = "io.jupyter-mcp/agent"
#: Where a transport that authenticated the person itself (Jupyter Server) puts their name in
#: the ASGI scope.
SIGNED_IN_USER_KEY = "jupyter_mcp.user"
#: What a handle may be made of: long enough not to be guessed, short enough for a header.
_HANDLE = re.compile(r"[A-Za-z0-9_.~-]{16,128}")


def _local_user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (a container without a passwd entry)
        return "local"


#: The OS user running this server: the person behind every caller not signed in.
LOCAL_USER = _local_user()


@dataclass(frozen=True)
class Caller:
    """One caller: the person, the program acting for them, and which agent of it."""

    #: The token's subject, or the local OS user.
    user: str
    #: The token's client id, or the ``clientInfo`` name (None when the client gave none).
    client: str | None = None
    #: ``stdio``, the HTTP session id, the agent handle; None: a stateless request without one.
    session: str | None = None
    #: The token's issuer when signed in; None for the local user.
    issuer: str | None = None

    @property
    def owner(self) -> str:
        """The key what this caller starts belongs to: two callers share it only when they are
        the same person, through the same client, in the same session or with the same handle."""
        who = "\n".join((self.issuer or "", self.user, self.client or "", self.session or ""))
        return "caller:" + hashlib.sha256(who.encode("utf-8", "surrogatepass")).hexdigest()

    @property
    def display(self) -> str:
        """How a person reads it: ``CLIENT (USER)``."""
        return f"{self.client} ({self.user})" if self.client else self.user

    def record(self) -> dict[str, str | None]:
        """As the audit log writes it: the session by a hash of it, which tells sessions apart
        without holding what would let a reader act as one."""
        return {"user": self.user, "client": self.client, "session": recorded_session(self.session)}


def recorded_session(session: str | None) -> str | None:
    """A session as records name it: ``stdio`` as is, any other by a hash (a handle or a session
    id is what makes a request that agent's, so no reader of a log learns one)."""
    if session is None or session == STDIO_CONNECTION:
        return session
    return hashlib.sha256(session.encode()).hexdigest()[:16]


def _request_context(ctx: Any) -> Any:
    return getattr(ctx, "request_context", ctx)


def agent_handle(ctx: Any) -> str | None:
    """The agent handle a request carries in its ``_meta``, if well formed (else None)."""
    meta = getattr(_request_context(ctx), "meta", None)
    handle = meta.get(AGENT_META_KEY) if isinstance(meta, dict) else None
    return handle if isinstance(handle, str) and _HANDLE.fullmatch(handle) else None


def remembered_connection(ctx: Any) -> str | None:
    """What a request's choices (``use_notebook``'s current notebook and names) are kept
    under: its session, or on a stateless request that carries an agent handle, that agent
    (the caller's owner key, so a handle someone else presents names nothing of theirs);
    None for a stateless request without one, which remembers nothing."""
    session = session_of(ctx)
    if session is not None:
        return session
    if agent_handle(ctx) is None:
        return None
    return caller_of(ctx).owner


def new_handle() -> str:
    """A handle for a stateless caller that brought none."""
    return "agent-" + secrets.token_urlsafe(16)


def _access_token(ctx: Any) -> Any:
    """The access token a sign-in validated for this request (``--auth-issuer``), or None."""
    request = getattr(_request_context(ctx), "request", None)
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    return getattr(user, "access_token", None)


def caller_of(ctx: Any) -> Caller:
    """The caller of a request: its token's, or the local user's, in its session (the agent
    handle it carries first; a stateless request without one has no session)."""
    session = agent_handle(ctx) or session_of(ctx)
    token = _access_token(ctx)
    if token is not None:
        claims = getattr(token, "claims", None) or {}
        subject = getattr(token, "subject", None) or claims.get("sub")
        return Caller(
            user=str(subject or f"client:{token.client_id}"),
            client=getattr(token, "client_id", None) or client_name_of(ctx),
            session=session,
            issuer=claims.get("iss") if isinstance(claims.get("iss"), str) else None,
        )
    request = getattr(_request_context(ctx), "request", None)
    scope = getattr(request, "scope", None)
    signed_in = scope.get(SIGNED_IN_USER_KEY) if isinstance(scope, dict) else None
    user = signed_in if isinstance(signed_in, str) else LOCAL_USER
    return Caller(user=user, client=client_name_of(ctx), session=session)


#: The caller whose request is being served, for code called without its context (the
#: presence in JupyterLab, the audit log, a detached run's executions).
_serving_caller: contextvars.ContextVar[Caller | None] = contextvars.ContextVar(
    "jupyter_mcp_serving_caller", default=None
)


def serving_caller() -> Caller | None:
    """The caller of the request (or detached run) being served, or None."""
    return _serving_caller.get()


def serving_record() -> dict[str, str | None] | None:
    """:meth:`Caller.record` of the caller being served, or None."""
    caller = _serving_caller.get()
    return caller.record() if caller is not None else None


@contextlib.contextmanager
def serving_as(caller: Caller | None) -> Iterator[None]:
    """While a request (or a run) is served: its caller, for :func:`serving_caller`."""
    token = _serving_caller.set(caller)
    try:
        yield
    finally:
        _serving_caller.reset(token)


def set_serving_caller(caller: Caller | None) -> None:
    """The caller from here on in this context (a detached run's own, in its fresh context)."""
    _serving_caller.set(caller)
