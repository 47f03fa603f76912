// An OpenID Connect provider on loopback for docchat's tests: `node server.mjs config.json`.
// The config names the port, the issuer, the clients, the signing keys (made by the test, so
// that it can also sign tokens the way this provider would), and the accounts file, read again
// at each login so that a test can change a person's claims (their groups) between logins.
// Login is the package's development login page: any password, the account named by "login".
import { readFileSync } from "node:fs";
import Provider from "oidc-provider";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const accounts = () => JSON.parse(readFileSync(config.accounts, "utf8"));

const provider = new Provider(config.issuer, {
  clients: config.clients,
  jwks: config.jwks,
  cookies: { keys: ["docchat-test-provider-cookie-key"] },
  scopes: ["openid", "email", "profile", "groups", "offline_access"],
  claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"], groups: ["groups"] },
  // The requested claims in the ID token too (a provider may do either; docchat reads both).
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    const claims = accounts()[id];
    if (!claims) return undefined;
    return { accountId: id, async claims() { return { sub: id, ...claims }; } };
  },
  // A first-party client: no consent page.
  async loadExistingGrant(ctx) {
    const { client, session } = ctx.oidc;
    const existing = session.grantIdFor(client.clientId);
    if (existing) return ctx.oidc.provider.Grant.find(existing);
    const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
    grant.addOIDCScope("openid email profile groups");
    await grant.save();
    return grant;
  },
  ttl: { IdToken: 300, AccessToken: 300, AuthorizationCode: 60, Interaction: 600, Session: 600, Grant: 600 },
});
provider.on("server_error", (ctx, error) => console.error("server_error", error));
provider.listen(config.port, "127.0.0.1", () => console.log(`listening ${config.issuer}`));
