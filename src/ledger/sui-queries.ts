/**
 * Every GraphQL query the service sends to Sui, in one place: typed by gql.tada from the
 * schema shipped with `@mysten/sui`, and listed in SUI_QUERIES so that a test validates each
 * against that schema (test/ledger/sui-queries.test.ts): a query that stops validating fails
 * the build, not the first request in production.
 */
import { graphql } from '@mysten/sui/graphql/schema'

export const GET_OBJECT_QUERY = graphql(`
  query knsGetObject($address: SuiAddress!) {
    object(address: $address) {
      address
      owner {
        __typename
        ... on AddressOwner { address { address } }
        ... on ConsensusAddressOwner { address { address } }
      }
      asMoveObject {
        contents {
          type { repr }
          json
        }
      }
    }
  }
`)

// Events are paged server-side, so the query takes a cursor, and a page size once the start-up
// check has read the service's limit (null until then: the service's default size, which its
// limit always allows). The transaction part is re-read with each page, which is cheap.
export const GET_TRANSACTION_QUERY = graphql(`
  query knsGetTransaction($digest: String!, $eventsFirst: Int, $eventsAfter: String) {
    transaction(digest: $digest) {
      digest
      sender { address }
      effects {
        status
        timestamp
        events(first: $eventsFirst, after: $eventsAfter) {
          pageInfo { hasNextPage endCursor }
          nodes {
            sender { address }
            contents {
              type { repr }
              json
            }
          }
        }
      }
    }
  }
`)

// `address(...)`, not `object(...)`: a Table's UID lives wrapped inside the map object, so it
// is an address that owns dynamic fields but is not an object of its own.
export const GET_DYNAMIC_FIELD_QUERY = graphql(`
  query knsGetDynamicField($parent: SuiAddress!, $name: DynamicFieldName!) {
    address(address: $parent) {
      dynamicField(name: $name) {
        value {
          __typename
          ... on MoveValue {
            type { repr }
            json
          }
        }
      }
    }
  }
`)

// `verifySignature`, not the deprecated `verifyZkLoginSignature` the SDK still sends. The
// service answers `success: true`, or an error saying why the signature does not verify
// (BAD_USER_INPUT); any other error is the service's, not the signer's.
export const VERIFY_SIGNATURE_QUERY = graphql(`
  query knsVerifySignature($message: Base64!, $signature: Base64!, $author: SuiAddress!) {
    verifySignature(message: $message, signature: $signature, intentScope: PERSONAL_MESSAGE, author: $author) {
      success
    }
  }
`)

// The ledger watcher's feed: ApprovalEvents in checkpoint order, each with its own cursor
// (edges), so the watcher can store how far it got event by event. `transaction` is there for
// every event of an indexed checkpoint, which is all this query returns.
export const APPROVAL_EVENTS_QUERY = graphql(`
  query knsApprovalEvents($type: String!, $first: Int, $after: String) {
    events(filter: { type: $type }, first: $first, after: $after) {
      pageInfo { hasNextPage }
      edges {
        cursor
        node {
          sequenceNumber
          timestamp
          sender { address }
          transaction { digest }
          contents {
            type { repr }
            json
          }
        }
      }
    }
  }
`)

/** The start-up check: the configured objects and the service's page limit, in one request. */
export const CHECK_DEPLOYMENT_QUERY = graphql(`
  query knsCheckDeployment($kns: SuiAddress!, $knsLatest: SuiAddress!, $keystore: SuiAddress!, $map: SuiAddress!, $idMap: SuiAddress!) {
    kns: object(address: $kns) { asMovePackage { address } }
    knsLatest: object(address: $knsLatest) { asMovePackage { address } }
    keystore: object(address: $keystore) { asMovePackage { address } }
    map: object(address: $map) { asMovePackage { address } }
    idMap: object(address: $idMap) {
      asMoveObject { contents { type { repr } json } }
    }
    serviceConfig {
      eventsPageLimit: maxPageSize(type: "TransactionEffects", field: "events")
    }
    epoch { epochId }
  }
`)

/** The current epoch: a zkLogin signature names the last epoch it is valid in (maxEpoch). */
export const CURRENT_EPOCH_QUERY = graphql(`
  query knsCurrentEpoch {
    epoch { epochId }
  }
`)

/** Every document above, by operation name (the test validates each against the SDK's schema). */
export const SUI_QUERIES = {
  knsGetObject: GET_OBJECT_QUERY,
  knsGetTransaction: GET_TRANSACTION_QUERY,
  knsGetDynamicField: GET_DYNAMIC_FIELD_QUERY,
  knsVerifySignature: VERIFY_SIGNATURE_QUERY,
  knsCheckDeployment: CHECK_DEPLOYMENT_QUERY,
  knsApprovalEvents: APPROVAL_EVENTS_QUERY,
  knsCurrentEpoch: CURRENT_EPOCH_QUERY,
} as const
