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

A caller is *identified* when something other than what it says about itself proves who it
is: a token ``--auth-issuer`` checked, the person Jupyter Server signed in, or the
``--mcp-token`` presented (its holder acts as the OS user running the server). An HTTP
caller without any of them (a loopback server without a token) is anonymous: its user is
only assumed, and its client name is whatever it declared. :attr:`Caller.identity` (the
person and the client, no session) is what an identified caller keeps across its connections:
its current notebook when it has neither a session nor a handle (:func:`remembered_connection`),
and its runs and tasks, which any of its connections may follow (:meth:`Caller.may_follow`).
An anonymous caller keeps nothing across connections but what its session or its handle
proves.

The audit log, the notebooks' histories, the presence in JupyterLab and the approvals name
the caller by :meth:`Caller.record` and :attr:`Caller.display`; what a caller starts belongs
to :attr:`Caller.owner`, which two agents of one person never share.
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
#: Where the HTTP transport marks a request that presented the ``--mcp-token`` in the ASGI
#: scope: its holder is the person the server runs for, identified by the token.
TOKEN_CHECKED_KEY = "jupyter_mcp.token_checked"
#: How a request's choices are remembered (:func:`remembered_by`): by its connection (stdio,
#: an HTTP session), by the agent handle it carries, by its identified caller, or not at all.
BY_CONNECTION, BY_HANDLE, BY_CALLER, NOWHERE = "connection", "handle", "caller", "nowhere"
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
    #: Whether something proves who the caller is (a token, Jupyter's sign-in, the
    #: ``--mcp-token``) rather than only what it declared; False for an anonymous HTTP caller
    #: and for the stdio peer (whose session is all it needs).
    identified: bool = False

    @property
    def owner(self) -> str:
        """The key what this caller starts belongs to: two callers share it only when they are
        the same person, through the same client, in the same session or with the same handle."""
        who = "\n".join((self.issuer or "", self.user, self.client or "", self.session or ""))
        return "caller:" + hashlib.sha256(who.encode("utf-8", "surrogatepass")).hexdigest()

    @property
    def identity(self) -> str | None:
        """The person and the client, whatever the session: what an identified caller keeps
        across its connections; None for a caller nothing identifies."""
        if not self.identified:
            return None
        who = "\n".join((self.issuer or "", self.user, self.client or ""))
        return "identity:" + hashlib.sha256(who.encode("utf-8", "surrogatepass")).hexdigest()

    def may_follow(self, owner: str, started_by: Caller | None) -> bool:
        """Whether this caller may follow (read, cancel, answer) what `owner` started: the same
        owner (the same session or handle), or the same identified person through the same
        client, from whichever connection. An anonymous caller follows only its own session's
        or handle's."""
        if owner == self.owner:
            return True
        identity = self.identity
        return identity is not None and started_by is not None and started_by.identity == identity

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


def remembered_by(ctx: Any) -> tuple[str | None, str]:
    """What a request's choices (``use_notebook``'s current notebook and names) are kept
    under, and how (:data:`BY_CONNECTION`, ...):

    - its session (the stdio peer, an HTTP session), as always;
    - on a stateless request that carries an agent handle, that agent: the caller's owner
      key, so a handle someone else presents names nothing of theirs;
    - on a stateless request without one, its identified caller: the person and the client
      (:attr:`Caller.identity`), so an agent that passes nothing back keeps its notebook, and
      another person, or another client of the same person, never sees it;
    - nothing (None, :data:`NOWHERE`) for an anonymous stateless request: nothing tells one
      anonymous client from another (a loopback server without a token is open to every
      process of the machine, each naming itself as it likes), and a notebook one chose
      would silently become where another's edits land.
    """
    session = session_of(ctx)
    if session is not None:
        return session, BY_CONNECTION
    caller = caller_of(ctx)
    if agent_handle(ctx) is not None:
        return caller.owner, BY_HANDLE
    identity = caller.identity
    if identity is not None:
        return identity, BY_CALLER
    return None, NOWHERE


def remembered_connection(ctx: Any) -> str | None:
    """The key of :func:`remembered_by`: None for a request that remembers nothing."""
    return remembered_by(ctx)[0]


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
            identified=True,
        )
    request = getattr(_request_context(ctx), "request", None)
    scope = getattr(request, "scope", None)
    signed_in = scope.get(SIGNED_IN_USER_KEY) if isinstance(scope, dict) else None
    user = signed_in if isinstance(signed_in, str) else LOCAL_USER
    token_checked = isinstance(scope, dict) and scope.get(TOKEN_CHECKED_KEY) is True
    return Caller(
        user=user,
        client=client_name_of(ctx),
        session=session,
        identified=isinstance(signed_in, str) or token_checked,
    )


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
