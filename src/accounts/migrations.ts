import type { Migration } from '../db/migrations.ts'

/** The login provider (version 13 on): its protocol state, clients, signing keys and login codes. */
export const ACCOUNTS_MIGRATIONS: Migration[] = [
  {
    version: 13,
    name: 'accounts: OpenID provider state, clients and signing keys; one-time login codes',
    up: [
      // oidc-provider's models (sessions, interactions, codes, grants, tokens), one JSON payload
      // each, found by (model, id) and by the secondary keys its adapter interface asks for.
      `CREATE TABLE oidc_payloads (
        model TEXT NOT NULL,
        id TEXT NOT NULL,
        payload TEXT NOT NULL,
        grant_id TEXT,
        uid TEXT,
        user_code TEXT,
        expires_at BIGINT,
        consumed_at BIGINT,
        PRIMARY KEY (model, id)
      )`,
      'CREATE INDEX oidc_payloads_grant ON oidc_payloads (grant_id)',
      'CREATE INDEX oidc_payloads_uid ON oidc_payloads (uid)',
      'CREATE INDEX oidc_payloads_expiry ON oidc_payloads (expires_at)',
      // Clients the operator registered; a confidential client's secret sealed with KNS_SECRET.
      `CREATE TABLE oidc_clients (
        client_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        redirect_uris TEXT NOT NULL,
        sealed_secret TEXT,
        created_at BIGINT NOT NULL
      )`,
      // Signing keys: published from created_at; signing from signing_from (null: the next key,
      // published but not signing yet); replaced at retired_at, published for the overlap after.
      `CREATE TABLE oidc_keys (
        kid TEXT PRIMARY KEY,
        public_jwk TEXT NOT NULL,
        sealed_private_jwk TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        signing_from BIGINT,
        retired_at BIGINT
      )`,
      // One-time login codes: only an HMAC of the code is kept. Sends are counted per number,
      // per number prefix and per client (an HMAC of its address) for the send limits.
      `CREATE TABLE login_codes (
        id TEXT PRIMARY KEY,
        interaction_uid TEXT NOT NULL,
        phone TEXT NOT NULL,
        prefix TEXT NOT NULL,
        client_hash TEXT NOT NULL,
        code_mac TEXT NOT NULL,
        attempts INTEGER NOT NULL,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        used_at BIGINT
      )`,
      'CREATE INDEX login_codes_phone ON login_codes (phone, created_at)',
      'CREATE INDEX login_codes_prefix ON login_codes (prefix, created_at)',
      'CREATE INDEX login_codes_client ON login_codes (client_hash, created_at)',
      'CREATE INDEX login_codes_interaction ON login_codes (interaction_uid, created_at)',
    ],
  },
  {
    version: 19,
    name: 'accounts: login-code sends marked texted or not (the pumping budgets count only texts); requesters that logged in to a number',
    up: [
      // A send to a number without an account texts nothing: it counts toward the per-(number,
      // requester) budget and cooldown like any other, not toward the pumping budgets. Sends
      // made before this version are counted as texts when the number has an account now.
      'ALTER TABLE login_codes ADD COLUMN texted INTEGER NOT NULL DEFAULT 0',
      'UPDATE login_codes SET texted = 1 WHERE EXISTS (SELECT 1 FROM users WHERE users.phone = login_codes.phone)',
      'CREATE INDEX login_codes_requester ON login_codes (phone, client_hash, created_at)',
      // The pumping budgets count texted sends only, and nothing bounds the sends that text
      // nothing per prefix or requester: counted through the full indexes, a flood of them
      // made every later send of its prefix visit it (100 000 sends: ~30 ms a send, under the
      // send's locks). Partial indexes hold only texted rows; no query needs the full ones.
      'DROP INDEX login_codes_prefix',
      'CREATE INDEX login_codes_prefix_texted ON login_codes (prefix, created_at) WHERE texted = 1',
      'DROP INDEX login_codes_client',
      'CREATE INDEX login_codes_client_texted ON login_codes (client_hash, created_at) WHERE texted = 1',
      // Who has logged in to a number, and from which client (an HMAC of its address group):
      // what a stranger's sends to the number cannot take away (docs/accounts.md, Send limits).
      `CREATE TABLE login_known_requesters (
        phone TEXT NOT NULL,
        client_hash TEXT NOT NULL,
        logged_in_at BIGINT NOT NULL,
        PRIMARY KEY (phone, client_hash)
      )`,
      'CREATE INDEX login_known_requesters_age ON login_known_requesters (logged_in_at)',
    ],
  },
  {
    version: 22,
    name: 'accounts: CAMARA clients (client credentials or authorization code, private_key_jwt): grant type, public keys, registered scopes',
    up: [
      // Null for the login (zkLogin) clients registered before, which keep their metadata as it was;
      // 'client_credentials' or 'authorization_code' for a CAMARA client (src/accounts/camara-clients.ts).
      'ALTER TABLE oidc_clients ADD COLUMN grant_type TEXT',
      // The client's JSON Web Key Set, public keys only (checked at registration): what its private_key_jwt assertions verify with.
      'ALTER TABLE oidc_clients ADD COLUMN jwks TEXT',
      // The scopes it may ask for, space-separated: CAMARA scopes, the purpose, and openid for a three-legged client.
      'ALTER TABLE oidc_clients ADD COLUMN scope TEXT',
    ],
  },
]
