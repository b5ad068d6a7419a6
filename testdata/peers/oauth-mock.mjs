// A real OAuth 2 authorization server for internal/oauth's tests:
// oauth2-mock-server on 127.0.0.1 at a random port, with what the tests need
// on top of it. Prints one JSON line per event on stdout, the first being
// {"event":"ready","issuer":URL}; exits when stdin closes.
//
// Environment:
//   MOCK_EXPIRES_IN  lifetime of access tokens in seconds (default 3600)
//   MOCK_DCR=1       offer dynamic client registration (RFC 7591) at /register
//
// Refresh tokens are single-use, as OAuth 2.1 asks of public clients: a
// refresh answers a new refresh token and spends the old one; a spent or
// unknown one gets invalid_grant. POST /test/revoke spends them all. A
// client secret that begins with "bad-" is refused (invalid_client) by an
// answer that quotes it, as a careless server might; one that begins with
// "echo-" is refused with an error_description that quotes it.
import { randomUUID } from 'node:crypto';
import { OAuth2Server } from 'oauth2-mock-server';

const expiresIn = Number(process.env.MOCK_EXPIRES_IN || 3600);
const dcr = process.env.MOCK_DCR === '1';
const say = (o) => process.stdout.write(JSON.stringify(o) + '\n');

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');
await server.start(0, '127.0.0.1');
const issuer = `http://127.0.0.1:${server.address().port}`;
server.issuer.url = issuer;

const live = new Set(); // refresh tokens not yet spent
const granted = new Map(); // authorization code or refresh token → the scope the person granted
const service = server.service;

service.on('beforeWellKnownOpenIdConfiguration', (res) => {
  res.body.token_endpoint_auth_methods_supported = ['client_secret_basic', 'none'];
  res.body.grant_types_supported.push('refresh_token');
  res.body.scopes_supported = ['read', 'write', 'offline_access'];
  if (dcr) res.body.registration_endpoint = `${issuer}/register`;
});

service.on('beforeAuthorizeRedirect', (redirect, req) => {
  const code = redirect.url.searchParams.get('code');
  if (code) granted.set(code, req.query.scope || '');
});

// The scope of a token: asked for (client_credentials), or granted at the
// authorization and carried on by refresh tokens.
const scopeOf = (body) => body.scope || granted.get(body.code || body.refresh_token) || '';

service.on('beforeTokenSigning', (token, req) => {
  const body = req.body || {};
  token.payload.exp = Math.floor(Date.now() / 1000) + expiresIn;
  token.payload.jti = randomUUID(); // every token differs, even within a second
  if (body.resource) token.payload.aud = body.resource;
  token.payload.scope = scopeOf(body);
});

service.on('beforeResponse', (res, req) => {
  const body = req.body || {};
  const auth = req.headers.authorization ? 'basic' : body.client_secret ? 'params' : 'none';
  let clientId = body.client_id || '';
  if (req.headers.authorization) {
    const [id] = Buffer.from(req.headers.authorization.replace(/^Basic /, ''), 'base64').toString().split(':');
    clientId = decodeURIComponent(id);
  }
  say({ event: 'token', grant_type: body.grant_type, resource: body.resource || '', scope: body.scope || '', client_id: clientId, auth, refresh_token: body.refresh_token || '' });
  const secret = req.headers.authorization ? Buffer.from(req.headers.authorization.replace(/^Basic /, ''), 'base64').toString().split(':').slice(1).join(':') : body.client_secret || '';
  if (decodeURIComponent(secret).startsWith('echo-')) {
    // A careless server that quotes the secret in its error description.
    res.statusCode = 401;
    res.body = { error: 'invalid_client', error_description: `unknown client secret ${decodeURIComponent(secret)}` };
    return;
  }
  if (decodeURIComponent(secret).startsWith('bad-')) {
    // A careless server that quotes the request in its error body.
    res.statusCode = 401;
    res.body = { error: 'invalid_client', error_description: 'unknown client', request: { ...body, secret: decodeURIComponent(secret) } };
    return;
  }
  if (body.grant_type === 'refresh_token') {
    if (!live.has(body.refresh_token)) {
      res.statusCode = 400;
      res.body = { error: 'invalid_grant', error_description: 'the refresh token is spent or unknown' };
      return;
    }
    live.delete(body.refresh_token);
  }
  if (res.statusCode === 200) {
    res.body.expires_in = expiresIn;
    res.body.scope = scopeOf(body);
    if (res.body.refresh_token) {
      live.add(res.body.refresh_token);
      granted.set(res.body.refresh_token, res.body.scope);
    }
  }
});

if (dcr) {
  service.addRoute('POST', '/register', async (req, res) => {
    const meta = typeof req.body === 'string' ? JSON.parse(req.body || '{}') : req.body || {};
    const clientId = `dyn-${randomUUID()}`;
    say({ event: 'register', client_id: clientId, redirect_uris: meta.redirect_uris, token_endpoint_auth_method: meta.token_endpoint_auth_method || '' });
    res.writeHead(201, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ ...meta, client_id: clientId, client_id_issued_at: Math.floor(Date.now() / 1000) }));
  });
}

// POST /test/mark?id=N prints {"event":"mark","id":"N"}: every event of a
// request answered before it is on stdout ahead of it.
service.addRoute('POST', '/test/mark', (req, res) => {
  say({ event: 'mark', id: new URL(req.url, issuer).searchParams.get('id') || '' });
  res.writeHead(204);
  res.end();
});

service.addRoute('POST', '/test/revoke', (req, res) => {
  live.clear();
  res.writeHead(204);
  res.end();
});

say({ event: 'ready', issuer });
process.stdin.on('end', async () => { await server.stop(); process.exit(0); });
process.stdin.resume();
