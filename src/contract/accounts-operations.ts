/**
 * Each operation of the login provider's interaction, the zkLogin salt and prover, and the
 * login clients' administration: its schemas, each with one realistic example (see api-operations.ts).
 */
import { alsoExemplified, exemplified, exemplifiedParams } from './examples.ts'
import {
  ConsentRequest, CreatedOidcClient, EpochResponse, InteractionDetails, InteractionParams, LoginRequest, NewOidcClient, OidcClient, OidcClientList,
  OidcClientParams, ProveRequest, ProveResponse, RedirectResponse, SaltRequest, SaltResponse, SendCodeRequest, SendCodeResponse,
} from './accounts-schemas.ts'

const UID = exemplifiedParams(InteractionParams, { uid: '_BDNCA19RHI5gzIX-1jIyg' })
/** An id_token of this provider (shortened: header, claims, signature). */
const ID_TOKEN = 'eyJhbGciOiJSUzI1NiIsImtpZCI6ImtuczEifQ.eyJpc3MiOiJodHRwczovL2tucy5leGFtcGxlLmNvbS9vaWRjIiwic3ViIjoiOGQwZjRjN2UiLCJhdWQiOiJrbnMtYXBwcm92ZSIsIm5vbmNlIjoiWWVWNVpvTjEifQ.c2lnbmF0dXJl'
const CONTINUE = { summary: 'Where the browser goes on', value: { redirectTo: 'https://kns.example.com/oidc/auth/_BDNCA19RHI5gzIX-1jIyg' } }
const CLIENT = {
  clientId: 'acme-bank-web', name: 'Acme Bank online banking', redirectUris: ['https://bank.example.com/login/callback'],
  confidential: true, builtIn: false, createdAt: '2026-11-02T10:12:09.551Z', grantTypes: ['authorization_code', 'implicit'], scope: null, keyIds: [],
}
const CAMARA_SCOPE = 'sim-swap:check sim-swap:retrieve-date dpv:FraudPreventionAndDetection'
const CAMARA_CLIENT = {
  clientId: 'acme-bank-fraud', name: 'Acme Bank fraud checks', redirectUris: [], confidential: false, builtIn: false,
  createdAt: '2026-11-20T08:41:55.102Z', grantTypes: ['client_credentials'], scope: CAMARA_SCOPE, keyIds: ['acme-2026-11'],
}

/** GET /oidc/interaction/{uid}/details */
export const InteractionInfo = {
  params: UID,
  answer: exemplified(InteractionDetails, {
    summary: 'A login asked for by a client',
    value: { uid: '_BDNCA19RHI5gzIX-1jIyg', prompt: 'login', client: { clientId: 'kns', name: 'KNS approvals' }, expiresAt: '2026-11-28T09:24:02.000Z' },
  }),
}

/** POST /oidc/interaction/{uid}/consent */
export const GiveConsent = {
  params: UID,
  body: exemplified(ConsentRequest, { summary: 'The user allows the client', value: { decision: 'approve' } }),
  answer: exemplified(RedirectResponse, CONTINUE),
}

/** POST /oidc/interaction/{uid}/code */
export const SendLoginCode = {
  params: UID,
  body: exemplified(SendCodeRequest, { summary: 'The number to text a code to', value: { phoneNumber: '+447700900123' } }),
  answer: exemplified(SendCodeResponse, { summary: 'Sent (or not: the answer is the same)', value: { sentTo: '+44 *** *** 0123', expiresInS: 300, resendAfterS: 60 } }),
}

/** POST /oidc/interaction/{uid}/login */
export const LoginWithCode = {
  params: UID,
  body: exemplified(LoginRequest, { summary: 'The code from the text message', value: { code: '482913' } }),
  answer: exemplified(RedirectResponse, CONTINUE),
}

/** POST /oidc/interaction/{uid}/abort */
export const AbortLogin = {
  params: UID,
  answer: exemplified(RedirectResponse, CONTINUE),
}

/** GET /zklogin/v1/epoch */
export const CurrentEpoch = {
  answer: exemplified(EpochResponse, { summary: 'The current epoch', value: { epoch: 912, maxEpochAhead: 30 } }),
}

/** POST /zklogin/v1/salt */
export const ZkLoginSalt = {
  body: exemplified(SaltRequest, { summary: 'An id_token of this provider (shortened)', value: { token: ID_TOKEN } }),
  answer: exemplified(SaltResponse, { summary: 'The user\'s salt', value: { salt: '129390038577185583942388216820280642146' } }),
}

/** POST /zklogin/v1/prove */
export const ZkLoginProve = {
  body: exemplified(ProveRequest, {
    summary: 'The id_token and the ephemeral key its nonce commits to',
    value: {
      jwt: ID_TOKEN, extendedEphemeralPublicKey: 'ANz5t1TV2D4qXbCXHNfQrZmyT0wpxxtqr20jLDdjwNMo', maxEpoch: 914,
      jwtRandomness: '100681567828351849884072155819400689117', salt: '129390038577185583942388216820280642146', keyClaimName: 'sub',
    },
  }),
  answer: exemplified(ProveResponse, {
    summary: 'The proof (numbers shortened)',
    value: {
      proofPoints: {
        a: ['17318089125952421736342263717932719437717844282410187957984751939942898251250', '11373966645469122582074082295985388258840681618268593976697325892280915681207', '1'],
        b: [['5939871147348834997361720122238980177152303274311047249905942384915768690895', '4533568271134785278731234570361482651996740791888285864966884032717049811708'],
          ['10564387285071555469753990661410840118635925466597037018058770041347518461368', '12597752169149722766210738219426566000592045773101498339917069049089658689580'], ['1', '0']],
        c: ['15791589472556826263231644728873337629015269984699404073623603352537678813171', '4547866499248881449676161158024748060485373250029423904113017422539037162527', '1'],
      },
      issBase64Details: { value: 'yJpc3MiOiJodHRwczovL2tucy5leGFtcGxlLmNvbS9vaWRjIiw', indexMod4: 1 },
      headerBase64: 'eyJhbGciOiJSUzI1NiIsImtpZCI6ImtuczEifQ',
    },
  }),
}

/** POST /api/v1/admin/oidc/clients */
export const AddOidcClient = {
  body: alsoExemplified(exemplified(NewOidcClient, {
    summary: 'A bank\'s web login, with a secret',
    value: { name: 'Acme Bank online banking', redirectUris: ['https://bank.example.com/login/callback'], clientId: 'acme-bank-web', confidential: true },
  }), 'camara', {
    summary: 'A bank\'s two-legged CAMARA client, with its public key',
    value: {
      name: 'Acme Bank fraud checks', clientId: 'acme-bank-fraud', grantType: 'client_credentials', scope: CAMARA_SCOPE,
      jwks: { keys: [{ kty: 'EC', crv: 'P-256', kid: 'acme-2026-11', use: 'sig', alg: 'ES256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0' }] },
    },
  }),
  answer: alsoExemplified(exemplified(CreatedOidcClient, { summary: 'The client and its secret, shown once', value: { ...CLIENT, clientSecret: 'k3Qm9Zt2vXbE8rLw4NcYp7HsJd1FgAu6' } }),
    'camara', { summary: 'A CAMARA client (no secret: it signs with its key)', value: { ...CAMARA_CLIENT, clientSecret: null } }),
}

/** GET /api/v1/admin/oidc/clients */
export const ListOidcClients = {
  answer: exemplified(OidcClientList, {
    summary: 'The built-in client and one more',
    value: {
      clients: [
        { clientId: 'kns', name: 'KNS approvals', redirectUris: ['https://kns.example.com/approve'], confidential: false, builtIn: true, createdAt: null, grantTypes: ['authorization_code', 'implicit'], scope: null, keyIds: [] },
        CLIENT,
        CAMARA_CLIENT,
      ],
    },
  }),
}

/** DELETE /api/v1/admin/oidc/clients/{clientId} */
export const RemoveOidcClient = {
  params: exemplifiedParams(OidcClientParams, { clientId: 'acme-bank-web' }),
  answer: exemplified(OidcClient, { summary: 'The client removed', value: CLIENT }),
}
