import type { Migration } from '../../db/migrations.ts'

/** SHAKEN (versions 10-11, 17): the stored STI-CA trust anchors, and the operator's signing credentials. */
export const SHAKEN_MIGRATIONS: Migration[] = [
  {
    version: 10,
    name: 'SHAKEN: stored trust anchors',
    up: [
      `CREATE TABLE shaken_trust_anchors (
        fingerprint TEXT PRIMARY KEY,
        pem TEXT NOT NULL,
        subject TEXT NOT NULL,
        not_after BIGINT NOT NULL,
        created_at BIGINT NOT NULL
      )`,
    ],
  },
  {
    version: 11,
    name: 'SHAKEN: signing credentials (STI-AS)',
    up: [
      `CREATE TABLE shaken_credentials (
        name TEXT PRIMARY KEY,
        key_sealed TEXT NOT NULL,
        chain_pem TEXT NOT NULL,
        x5u TEXT NOT NULL,
        subject TEXT NOT NULL,
        not_after BIGINT NOT NULL,
        created_at BIGINT NOT NULL
      )`,
    ],
  },
  {
    version: 17,
    name: 'SHAKEN: CRL signers trusted explicitly (the STI-PA\'s CRL is signed by a certificate that is not a CA); a credential\'s display name',
    up: [
      `CREATE TABLE shaken_crl_signers (
        fingerprint TEXT PRIMARY KEY,
        pem TEXT NOT NULL,
        subject TEXT NOT NULL,
        not_after BIGINT NOT NULL,
        created_at BIGINT NOT NULL
      )`,
      // RFC 9795: the caller name (rcd nam) PASSporTs signed with the credential carry.
      'ALTER TABLE shaken_credentials ADD COLUMN display_name TEXT',
    ],
  },
]
