"""The server inside Jupyter Server: ``{base_url}/mcp``, for agents beside a person.

On once the package is installed beside Jupyter Server (the Jupyter config file it ships
enables it); off with::

    jupyter server extension disable jupyter_mcp_server
    # or, for one run:
    jupyter server --ServerApp.jpserver_extensions="{'jupyter_mcp_server': False}"

It serves the same MCP server as ``jupyter-mcp-server start --transport
streamable-http`` (every tool, resource and prompt, toolset selection by
query, both protocol generations) through the SDK's own streamable-HTTP
application, answered from a tornado handler on Jupyter Server's event loop
(:mod:`jupyter_mcp_server._transports.tornado_bridge`). Jupyter Server's
authentication guards it: a request needs what any other API call needs
(``Authorization: token …`` with the server's token, or a logged-in
browser's cookie and XSRF token), and is refused with 403 otherwise; behind JupyterHub, a
request without a token the Hub knows is 401 pointing MCP clients at the Hub's OAuth instead
(:mod:`jupyter_mcp_server._jupyter.hub_sign_in`). Jupyter's authorizer
then chooses the caller's profile, per request (:mod:`jupyter_mcp_server._jupyter.permissions`).

The agent and the person share kernels and files: kernels are started by
Jupyter Server's kernel manager (they are in ``/api/kernels`` and JupyterLab;
a kernel JupyterLab started can be shared with ``use_notebook(kernel_id=…)``),
and notebooks are the server's ``root_dir``, read and written through its
contents manager when that is not a plain directory on this machine. Each
notebook's kernel is bound to it in the server's sessions (JupyterLab shows
it; a person opening the notebook gets it), and where JupyterLab's
collaboration extension is loaded, the agent's edits appear live in the open
notebook (:mod:`jupyter_mcp_server._jupyter.collaboration`).

Limits and capabilities are configured like any Jupyter setting, e.g.
``--JupyterMCPServerApp.max_kernels=4`` or
``c.JupyterMCPServerApp.capabilities = ["kernel.auto-restart"]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import allow_unauthenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.extension.application import ExtensionApp
from tornado import web
from traitlets import Bool, Float, Int, List, TraitType, Unicode

from jupyter_mcp_server._app import Application, build_application
from jupyter_mcp_server._config import (
    INSIDE_JUPYTER,
    JUPYTER_SETTINGS,
    ConfigError,
    Setting,
    default_of,
    read_config,
)
from jupyter_mcp_server._jupyter.collaboration import LiveDocuments, LiveStore
from jupyter_mcp_server._jupyter.hub_sign_in import (
    RESOURCE_METADATA_PATH,
    SERVER_METADATA_PATH,
    HubSignIn,
    spawned_sign_in,
)
from jupyter_mcp_server._jupyter.permissions import granted_profile
from jupyter_mcp_server._kernels.inprocess import ServerAppBackend
from jupyter_mcp_server._protocol.profile_guard import SCOPE_KEY
from jupyter_mcp_server._store.contents import ManagerContents
from jupyter_mcp_server._transports.http import SelectionRouter
from jupyter_mcp_server._transports.tornado_bridge import Disconnect, serve_asgi

logger = logging.getLogger(__name__)

EXTENSION_NAME = "jupyter_mcp_server"
MCP_PATH = "/mcp"


class MCPBridge:
    """The MCP application and its lifetime, on Jupyter Server's event loop."""

    def __init__(self, application: Application) -> None:
        self.application = application
        self.router = SelectionRouter(application)
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event | None = None
        self._stopping: asyncio.Event | None = None

    async def start(self) -> None:
        if self._task is None:
            self._ready, self._stopping = asyncio.Event(), asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())
        assert self._ready is not None
        ready = asyncio.ensure_future(self._ready.wait())
        await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if not ready.done():
            ready.cancel()
            self._task.result()  # it failed: say why

    async def _run(self) -> None:
        assert self._ready is not None and self._stopping is not None
        async with self.application.running(), self.router.running():
            self._ready.set()
            await self._stopping.wait()

    async def stop(self) -> None:
        if self._task is None or self._stopping is None:
            return
        self._stopping.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._task, 20)

    async def serve(self, handler: MCPHandler) -> None:
        await self.start()
        await serve_asgi(
            handler, self.router, MCP_PATH, handler.disconnected, {SCOPE_KEY: handler.profile}
        )


@dataclass(frozen=True)
class SignInOptions:
    """Whether ``/mcp`` behind a Hub points MCP clients at it, and with which scopes."""

    enabled: bool = True
    custom_scopes: bool = False

    def sign_in(self, handler: JupyterHandler) -> HubSignIn | None:
        """The Hub sign-in for `handler`'s request; None: off, or not behind a Hub."""
        if not self.enabled:
            return None
        request = handler.request
        return spawned_sign_in(
            f"{request.protocol}://{request.host}", custom_scopes=self.custom_scopes
        )


class MCPHandler(JupyterHandler):
    """``{base_url}/mcp``: Jupyter's authentication, then the MCP application."""

    bridge: MCPBridge
    #: The caller's profile, from Jupyter's authorizer (`prepare`).
    profile: str | None = None

    def initialize(self, bridge: MCPBridge, sign_in: SignInOptions) -> None:  # type: ignore[override]
        self.bridge = bridge
        self.sign_in = sign_in
        self.disconnected = Disconnect()

    async def prepare(self) -> None:  # type: ignore[override]
        # No login page for an API: without a user this is a 401 (behind a Hub) or a 403.
        try:
            await super().prepare(_redirect_to_login=False)
        except web.HTTPError as error:
            # Jupyter's 403 for a request nobody is signed in to (its XSRF check on a POST
            # without a token, or its check for a user) becomes the sign-in's answer; a 403
            # for anything else (a host not allowed, a signed-in browser's missing XSRF token)
            # stays.
            if error.status_code != 403 or self.current_user is not None or not self.check_host():
                raise
        user = self.current_user
        if user is None:
            self._refuse_unauthenticated()
            return
        # What the caller may do is Jupyter's authorizer's to say, asked for each request.
        self.profile = await granted_profile(self, user)
        if self.profile is None:
            raise web.HTTPError(
                403,
                "Not authorized to read contents on this server: ask its administrator for "
                "read (or write, execute) permission.",
            )

    def _refuse_unauthenticated(self) -> None:
        """No user: behind a Hub, 401 naming the protected resource metadata (where MCP clients
        start signing in), unless the Hub knew the token's owner and it may not reach this
        server (403: signing in again as the same person changes nothing); else 403."""
        sign_in = self.sign_in.sign_in(self)
        # HubAuth keeps the user model it got for the request's token, before its access check
        # (None: no token, or one the Hub does not know).
        known = isinstance(getattr(self, "_cached_hub_user", None), dict)
        if sign_in is None or known:
            raise web.HTTPError(
                403,
                "Not allowed on this server: this token's owner may not reach it."
                if known
                else "Authentication required: send 'Authorization: token <Jupyter token>'.",
            )
        presented = bool(self.request.headers.get("Authorization"))
        description = (
            "The Hub does not know this token (expired, revoked or not a Hub token): sign in again."
            if presented
            else "Sign in through JupyterHub: see the protected resource metadata."
        )
        self.set_status(401)
        self.set_header(
            "WWW-Authenticate",
            sign_in.challenge("invalid_token" if presented else None, description),
        )
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        error = {"error": "invalid_token"} if presented else {"error": "unauthorized"}
        self.finish(json.dumps({**error, "error_description": description}))

    def on_connection_close(self) -> None:
        self.disconnected()

    def check_etag_header(self) -> bool:
        return False

    async def get(self) -> None:
        await self.bridge.serve(self)

    async def post(self) -> None:
        await self.bridge.serve(self)

    async def delete(self) -> None:
        await self.bridge.serve(self)


class _MetadataHandler(JupyterHandler):
    """A sign-in document, served to anyone (it is what a client reads before it has a token)."""

    def initialize(self, sign_in: SignInOptions) -> None:  # type: ignore[override]
        self.sign_in = sign_in

    def check_xsrf_cookie(self) -> None:
        return None

    def document(self, sign_in: HubSignIn) -> dict[str, object]:
        raise NotImplementedError

    @allow_unauthenticated
    def get(self) -> None:
        sign_in = self.sign_in.sign_in(self)
        if sign_in is None:
            raise web.HTTPError(404)
        self.set_header("Content-Type", "application/json")
        # Built from the request's origin where the Hub has no public_url: not for a shared cache.
        self.set_header("Cache-Control", "no-store")
        self.set_header("Access-Control-Allow-Origin", "*")
        self.finish(json.dumps(self.document(sign_in)))


class ResourceMetadataHandler(_MetadataHandler):
    """``{base_url}/.well-known/oauth-protected-resource/mcp`` (RFC 9728)."""

    def document(self, sign_in: HubSignIn) -> dict[str, object]:
        return sign_in.protected_resource()


class ServerMetadataHandler(_MetadataHandler):
    """``{base_url}/.well-known/openid-configuration``: the issuer's RFC 8414 metadata."""

    def document(self, sign_in: HubSignIn) -> dict[str, object]:
        return sign_in.authorization_server()


def _trait(setting: Setting) -> TraitType[Any, Any]:
    """A setting as a Jupyter trait: its kind, its help, and its default as ``ServerConfig``
    declares it. A setting the environment may also set has no default here (None, or an empty
    text: not given), so that the environment still sets it when Jupyter's config does not."""
    if setting.kind is list:
        return List(Unicode(), config=True, help=setting.help)
    if setting.kind is str:
        return Unicode("", config=True, help=setting.help)
    kind = {float: Float, int: Int, bool: Bool}[setting.kind]
    if setting.env:
        return kind(None, allow_none=True, config=True, help=setting.help)
    return kind(default_of(setting.name), config=True, help=setting.help)


def _given(app: JupyterMCPServerApp) -> dict[str, Any]:
    """The settings' values from the extension's traits, by setting name (None: not given)."""
    values = {
        setting.name: getattr(app, setting.jupyter)
        for setting in JUPYTER_SETTINGS
        if setting.jupyter
    }
    return {name: None if value in ("", None) else value for name, value in values.items()}


class JupyterMCPServerApp(ExtensionApp):
    """jupyter-mcp-server as a Jupyter Server extension."""

    name = EXTENSION_NAME
    load_other_extensions = True

    # One trait per setting config.SETTINGS declares for Jupyter, made from its declaration.
    locals().update(
        {setting.jupyter: _trait(setting) for setting in JUPYTER_SETTINGS if setting.jupyter}
    )
    use_contents_manager = Bool(
        None,
        allow_none=True,
        config=True,
        help="Read and write notebooks through Jupyter Server's contents manager. Default: only when it is "
        "not a plain directory on this machine (for a plain directory the files are the same either way).",
    )

    hub_sign_in = Bool(
        True,
        config=True,
        help="Behind JupyterHub, answer a request to /mcp without a token with 401 and serve the "
        "metadata through which MCP clients sign in with the Hub's OAuth (docs/authorization.md). "
        "Off: a 403, and no metadata, as outside a Hub.",
    )
    hub_custom_scopes = Bool(
        False,
        config=True,
        help="Behind JupyterHub, advertise the custom:jupyter_server:* scopes for clients to ask "
        "for (declare them in the Hub's custom_scopes first: the Hub refuses a sign-in asking for "
        "a scope it does not know).",
    )

    bridge: MCPBridge | None = None

    application: Application | None = None

    def initialize_settings(self) -> None:
        self.application = configure(self)

    def initialize_handlers(self) -> None:
        assert self.application is not None
        self.bridge = MCPBridge(self.application)
        sign_in = SignInOptions(bool(self.hub_sign_in), bool(self.hub_custom_scopes))
        self.handlers.extend(
            [
                (MCP_PATH, MCPHandler, {"bridge": self.bridge, "sign_in": sign_in}),
                (RESOURCE_METADATA_PATH, ResourceMetadataHandler, {"sign_in": sign_in}),
                (SERVER_METADATA_PATH, ServerMetadataHandler, {"sign_in": sign_in}),
            ]
        )

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:  # type: ignore[override]
        if self.bridge is not None:
            await self.bridge.start()

    async def stop_extension(self) -> None:
        if self.bridge is not None:
            await self.bridge.stop()


def configure(app: JupyterMCPServerApp) -> Application:
    """The same server as the CLI's, built by the same composition root, on Jupyter Server's
    kernels, files and (where JupyterLab's collaboration runs) its open documents."""
    serverapp = app.serverapp
    assert serverapp is not None, "an extension is configured once it is linked to a ServerApp"
    root = Path(serverapp.root_dir).expanduser().resolve()
    try:
        given = _given(app)
        config = read_config(
            {
                **given,
                "workspace_root": str(root),
                "transport": "streamable-http",
                "kernel_backend": given["kernel_backend"] or ServerAppBackend.name,
                "max_timeout": max(given["max_timeout"], given["default_timeout"]),
                # No kernel is prestarted in somebody's Jupyter Server unless asked for.
                "capability_args": ["kernel.prestart=off", *given["capability_args"]],
            },
            from_environment=INSIDE_JUPYTER,
        )
        contents = serverapp.contents_manager
        use_contents = app.use_contents_manager
        if use_contents is None:
            use_contents = not _is_plain_directory(contents, root)
        live = LiveDocuments(serverapp)
        application = build_application(
            config,
            serverapp,
            contents=ManagerContents(contents) if use_contents else None,
            # A notebook JupyterLab has open is edited in its shared document.
            wrap_store=lambda store: LiveStore(store, live),
            # The people in JupyterLab's rooms, and where they are, for the tools to say.
            people=live.people,
        )
    except ConfigError as error:
        raise RuntimeError(f"jupyter_mcp_server: {error}") from None
    backend = application.state.kernels.backend
    if isinstance(backend, ServerAppBackend) and backend.remote_specs:
        # Kernels on a gateway (--GatewayClient.url): ask it for its kernelspecs once the
        # server runs, so that the first notebook gets the right ones in its metadata.
        _soon(backend.refresh, app.log)
    app.log.info(
        "jupyter-mcp-server: MCP endpoint at %s (kernels from this server's kernel manager; notebooks %s)",
        serverapp.base_url.rstrip("/") + MCP_PATH,
        "through its contents manager" if use_contents else f"in {root}",
    )
    return application


def _soon(refresh: Any, log: Any) -> None:
    """Run `refresh()` on Jupyter Server's event loop once it runs; a failure is only logged."""

    async def run() -> None:
        try:
            await refresh()
        except Exception as error:
            log.warning(
                "jupyter-mcp-server: could not ask the gateway for its kernelspecs yet (%s)", error
            )

    with contextlib.suppress(RuntimeError):
        asyncio.get_event_loop().call_soon(lambda: asyncio.ensure_future(run()))


def _is_plain_directory(contents: Any, root: Path) -> bool:
    """Whether the contents manager serves files straight from `root` on this machine."""
    from jupyter_server.services.contents.filemanager import (
        AsyncFileContentsManager,
        FileContentsManager,
    )

    if not isinstance(contents, (FileContentsManager, AsyncFileContentsManager)):
        return False
    with contextlib.suppress(Exception):
        return Path(contents.root_dir).expanduser().resolve() == root
    return False


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    return [{"module": __name__, "app": JupyterMCPServerApp}]
