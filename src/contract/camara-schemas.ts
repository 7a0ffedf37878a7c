/**
 * The schemas of the CAMARA SIM Swap (2.1.0) and Device Swap (1.0.0) APIs, as their definitions
 * give them (Commonalities 0.6): CAMARA's own request, answer and error shapes, not the
 * service's (src/http/camara/ answers them).
 */
import { Type, type TSchema } from 'typebox'

/** Commonalities 0.6 `XCorrelator`. */
export const X_CORRELATOR_PATTERN = '^[a-zA-Z0-9-_:;.\\/<>{}]{0,256}$'
/** CAMARA's `PhoneNumber`: E.164 with its `+` (stricter on the `+` than the service's own E164). */
export const CAMARA_PHONE_PATTERN = '^\\+[1-9][0-9]{4,14}$'

export const XCorrelator = Type.String({ pattern: X_CORRELATOR_PATTERN, description: 'Correlation id for the different services: echoed in the answer\'s `x-correlator` header' })

export const CamaraHeaders = Type.Object({ 'x-correlator': Type.Optional(XCorrelator) })

export const CamaraPhoneNumber = Type.String({
  pattern: CAMARA_PHONE_PATTERN,
  description: 'E.164 with its leading `+`. With a two-legged token: required. With a three-legged token: must be absent (the token names the number).',
})

export const MaxAge = Type.Integer({ minimum: 1, maximum: 2400, default: 240, description: 'Period in hours to be checked; at most the monitored period (400 OUT_OF_RANGE past it)' })

export const CreateCheckSwap = Type.Object({ phoneNumber: Type.Optional(CamaraPhoneNumber), maxAge: Type.Optional(MaxAge) })
export const CreateSwapDate = Type.Object({ phoneNumber: Type.Optional(CamaraPhoneNumber) })

export const CheckSwapInfo = Type.Object({ swapped: Type.Boolean({ description: 'Whether the SIM (or device) changed within `maxAge` hours' }) })

const MonitoredPeriod = Type.Optional(Type.Integer({ description: 'The monitored period in days, given when no change is kept within it (the date is null)' }))
const ChangeDate = (what: string) => Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
  description: `Timestamp of the latest ${what} (RFC 3339, UTC); the activation when nothing changed since; null when none is kept within the monitored period`,
})
export const SimSwapInfo = Type.Object({ latestSimChange: ChangeDate('SIM change'), monitoredPeriod: MonitoredPeriod })
export const DeviceSwapInfo = Type.Object({ latestDeviceChange: ChangeDate('device change'), monitoredPeriod: MonitoredPeriod })

/** CAMARA's `ErrorInfo`: every error answer of these APIs. */
export const CamaraErrorInfo = Type.Object({
  status: Type.Integer({ description: 'HTTP response status code' }),
  code: Type.String({ description: 'Commonalities code, e.g. INVALID_ARGUMENT, OUT_OF_RANGE, UNAUTHENTICATED, PERMISSION_DENIED, IDENTIFIER_NOT_FOUND, MISSING_IDENTIFIER, UNNECESSARY_IDENTIFIER, SERVICE_NOT_APPLICABLE, TOO_MANY_REQUESTS' }),
  message: Type.String({ description: 'A human-readable description of the error' }),
}, { $id: 'CamaraErrorInfo', description: 'Every error answer of the CAMARA APIs (Commonalities 0.6)' })

/** `{ ...ok, 4xx/5xx: CamaraErrorInfo }` for a CAMARA route's `response` schema. */
export function withCamaraErrors<T extends Record<number, TSchema>>(ok: T) {
  return { ...ok, '4xx': Type.Ref('CamaraErrorInfo'), '5xx': Type.Ref('CamaraErrorInfo') }
}
