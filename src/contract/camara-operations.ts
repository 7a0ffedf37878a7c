/** Each CAMARA operation (SIM Swap, Device Swap): its schemas, each with one realistic example (see api-operations.ts). */
import { exemplified, exemplifiedParams } from './examples.ts'
import { CamaraHeaders, CheckSwapInfo, CreateCheckSwap, CreateSwapDate, DeviceSwapInfo, SimSwapInfo } from './camara-schemas.ts'

const TWO_LEGGED_CHECK = { summary: 'Two-legged token: the number in the body', value: { phoneNumber: '+447700900123', maxAge: 120 } }
const TWO_LEGGED_DATE = { summary: 'Two-legged token: the number in the body', value: { phoneNumber: '+447700900123' } }

/** POST /sim-swap/v2/check */
export const CheckSimSwap = {
  body: exemplified(CreateCheckSwap, TWO_LEGGED_CHECK),
  answer: exemplified(CheckSwapInfo, { summary: 'The SIM changed within maxAge', value: { swapped: true } }),
}

/** POST /sim-swap/v2/retrieve-date */
export const RetrieveSimSwapDate = {
  body: exemplified(CreateSwapDate, TWO_LEGGED_DATE),
  answer: exemplified(SimSwapInfo, { summary: 'The latest SIM change', value: { latestSimChange: '2026-11-20T09:41:07.312Z' } }),
}

/** POST /device-swap/v1/check */
export const CheckDeviceSwap = {
  body: exemplified(CreateCheckSwap, { summary: 'Two-legged token: the number in the body', value: { phoneNumber: '+447700900123', maxAge: 240 } }),
  answer: exemplified(CheckSwapInfo, { summary: 'No device change within maxAge', value: { swapped: false } }),
}

/** POST /device-swap/v1/retrieve-date */
export const RetrieveDeviceSwapDate = {
  body: exemplified(CreateSwapDate, TWO_LEGGED_DATE),
  answer: exemplified(DeviceSwapInfo, { summary: 'No change kept within the monitored period', value: { latestDeviceChange: null, monitoredPeriod: 100 } }),
}

/** The headers every CAMARA operation takes (the access token is a security requirement, not a parameter). */
export const CamaraRequestHeaders = exemplifiedParams(CamaraHeaders, { 'x-correlator': 'b4333c46-49c0-4f62-80d7-f0ef930f1c46' })
