// An OpenID provider for the tests: `oidc-provider` (a certified implementation) on loopback.
//
// Run as `node provider.mjs <oidc-provider's package folder> <settings.json>`; it prints one
// JSON line, {"issuer": ...}, once it listens. settings.json holds the signing key (a private
// JWK the tests made, so that they can also mint tokens the provider's own key signs) and this
// server's client for introspection. Sign-in uses oidc-provider's development interactions
// (any login and password), which the tests drive over HTTP.
//
// /test/* are the tests' controls: POST /test/jwks?mode=up|down|slow|garbage makes the JWKS
// answer normally, drop the connection, answer after 60 s, or answer bytes that are not JSON;
// POST /test/format?resource=URL&format=opaque|jwt chooses the access token format for a
// resource (opaque tokens are introspected); POST /test/scopes?resource=URL&scope=... limits
// the scopes a token for that resource may carry (without scope: all of them again).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [packageFolder, settingsFile] = process.argv.slice(2);
const settings = JSON.parse(readFileSync(settingsFile, 'utf8'));
const { default: Provider } = await import(pathToFileURL(join(packageFolder, 'lib', 'index.js')).href);

const RESOURCE_SCOPES = 'notebooks:read notebooks:write code:execute';
const formats = new Map();
const scopes = new Map();
let jwksMode = 'up';
let handler = null;

const server = createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  if (url.pathname.startsWith('/test/')) {
    if (url.pathname === '/test/jwks') jwksMode = url.searchParams.get('mode');
    if (url.pathname === '/test/format') formats.set(url.searchParams.get('resource'), url.searchParams.get('format'));
    if (url.pathname === '/test/scopes') scopes.set(url.searchParams.get('resource'), url.searchParams.get('scope') || RESOURCE_SCOPES);
    res.writeHead(204).end();
    return;
  }
  if (url.pathname === '/jwks' && jwksMode !== 'up') {
    if (jwksMode === 'down') { req.socket.destroy(); return; }
    if (jwksMode === 'garbage') { res.writeHead(200, { 'content-type': 'application/json' }).end('{"keys": [ garbage'); return; }
    if (jwksMode === 'slow') { setTimeout(() => res.writeHead(503).end(), 60_000).unref(); return; }
  }
  handler(req, res);
});

server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    jwks: { keys: [settings.signing_key] },
    cookies: { keys: ['tests-only-cookie-key'] },
    clients: [settings.introspection_client],
    scopes: ['openid', 'offline_access', ...RESOURCE_SCOPES.split(' ')],
    claims: { openid: ['sub'] },
    findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    pkce: { required: () => true },
    ttl: { AccessToken: 600, AuthorizationCode: 60, Grant: 3600, Interaction: 600, Session: 3600, IdToken: 600, RefreshToken: 3600 },
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx, client, oneOf) => (oneOf ? oneOf[0] : undefined),
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resourceIndicator) => ({
          scope: scopes.get(resourceIndicator) ?? RESOURCE_SCOPES,
          audience: resourceIndicator,
          accessTokenTTL: 600,
          accessTokenFormat: formats.get(resourceIndicator) ?? 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
  });
  provider.on('server_error', (ctx, error) => console.error('server_error', error));
  handler = provider.callback();
  console.log(JSON.stringify({ issuer }));
});
