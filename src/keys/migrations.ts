import type { Migration } from '../db/migrations.ts'

/** API keys after the foundation (version 14 on). */
export const KEYS_MIGRATIONS: Migration[] = [
  {
    version: 14,
    name: 'keys: the admin scope split into stats, webhooks and oidc; existing admin keys keep statistics uploads only',
    up: [],
    // An `admin` key could upload statistics and also subscribe a URL to any vendor's decisions
    // (and replay them) and register login clients. Which of those a key was meant for is not
    // known, so each keeps the least: `stats`. docs/operations.md (Upgrades) says what to do.
    only: {
      sqlite: [`UPDATE api_keys SET scopes = trim(replace(',' || scopes || ',', ',admin,', ',stats,'), ',')
        WHERE ',' || scopes || ',' LIKE '%,admin,%'`],
      postgres: [`UPDATE api_keys SET scopes = trim(both ',' from replace(',' || scopes || ',', ',admin,', ',stats,'))
        WHERE ',' || scopes || ',' LIKE '%,admin,%'`],
    },
  },
  {
    version: 18,
    name: 'keys: a signing key is bound to the credentials, attestation levels and numbers it may sign with (none until bound)',
    // A signing key could sign any number under any credential, another carrier's included.
    // Which credentials each existing key was meant for is not known: none, until an operator
    // binds it (kns api-key bind; docs/operations.md, Upgrades).
    up: ['ALTER TABLE api_keys ADD COLUMN signing_binding TEXT'],
  },
]
