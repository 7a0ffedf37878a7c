import type { Migration } from '../../db/migrations.ts'

/** Caller verification with SHAKEN certificates (version 10): the stored STI-CA trust anchors. */
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
]
