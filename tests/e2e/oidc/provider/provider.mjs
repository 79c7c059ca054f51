// A real OpenID provider for Steward's sign-on tests: node_modules/oidc-provider (certified by
// the OpenID Foundation) with the configuration the tests write as JSON (argv[2]):
//   {issuer, port, audience, scope, accessTokenTTL, jwks: {keys: [private JWKs]},
//    clients: [oidc-provider client metadata], users: {name: [groups]}}
// Its signing keys are the tests' own: a rotation is a restart with another key first.
// Access tokens for `audience` are JWTs (resourceIndicators) carrying the user's `groups` and
// `preferred_username`. The login and consent pages are oidc-provider's devInteractions (any
// password; the tests' users only). Plain http on 127.0.0.1, which oidc-provider accepts.
import fs from 'node:fs';
import Provider, { errors } from 'oidc-provider';

const cfg = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));

function account(id) {
  const groups = cfg.users[id];
  if (groups === undefined) return undefined;
  return { accountId: id, claims: async () => ({ sub: id, preferred_username: id, groups }) };
}

const provider = new Provider(cfg.issuer, {
  clients: cfg.clients,
  jwks: cfg.jwks,
  findAccount: async (ctx, id) => account(id),
  claims: { openid: ['sub'], profile: ['preferred_username'], groups: ['groups'] },
  scopes: ['openid', 'profile', 'groups'],
  features: {
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => cfg.audience,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resource) => {
        if (resource !== cfg.audience) throw new errors.InvalidTarget();
        return {
          scope: cfg.scope,
          audience: cfg.audience,
          accessTokenTTL: cfg.accessTokenTTL,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        };
      },
    },
  },
  extraTokenClaims: async (ctx, token) => {
    const groups = token.accountId ? cfg.users[token.accountId] : undefined;
    return groups ? { groups, preferred_username: token.accountId } : undefined;
  },
});

provider.on('server_error', (ctx, error) => console.error('server_error', error));

const server = provider.listen(cfg.port, '127.0.0.1', () => {
  console.log(`oidc-provider listening issuer=${cfg.issuer}`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
