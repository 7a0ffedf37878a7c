/**
 * The little of the `smpp` package (0.5.x, CommonJS, no types of its own) that the SMPP sender
 * and its tests use. Read at runtime as a default import (module.exports).
 */
declare module 'smpp' {
  import type { EventEmitter } from 'node:events'
  import type { Server as NetServer, Socket } from 'node:net'

  /** One PDU; its parameters (system_id, destination_addr, short_message, ...) are own properties. */
  export class PDU {
    constructor(command: string, options?: Record<string, unknown>)
    command: string
    command_status: number
    sequence_number: number
    isResponse(): boolean
    /** The response to this request (same sequence number), e.g. `{ command_status: errors.ESME_RTHROTTLED }`. */
    response(options?: Record<string, unknown>): PDU;
    [param: string]: unknown
  }

  /**
   * A connection. Emits 'connect'/'secureConnect', 'close', 'error' (an unhandled one throws),
   * 'pdu' and, per PDU received, its command name ('submit_sm', 'enquire_link', 'unbind', ...).
   */
  export interface Session extends EventEmitter {
    readonly socket: Socket
    /** Sends a PDU; `onResponse` gets the response with the same sequence number. False if the socket is not writable. */
    send(pdu: PDU, onResponse?: (response: PDU) => void, onSent?: (pdu: PDU) => void): boolean
    pause(): void
    resume(): void
    /** Ends the socket (after what is written). */
    close(callback?: () => void): void
    destroy(callback?: () => void): void
  }

  export interface Server extends NetServer {
    readonly sessions: Session[]
  }

  export interface ConnectOptions {
    host: string
    port: number
    tls?: boolean
    /** Milliseconds between enquire_links the package sends itself (no answer checked). */
    auto_enquire_link_period?: number
  }

  interface Encoding {
    match(text: string): boolean
    encode(text: string): Buffer
  }

  interface Smpp {
    connect(options: ConnectOptions): Session
    createServer(listener: (session: Session) => void): Server
    PDU: typeof PDU
    /** SMPP command_status values by name (ESME_ROK, ESME_RTHROTTLED, ...). */
    errors: {
      readonly ESME_ROK: number
      readonly ESME_RINVPASWD: number
      readonly ESME_RINVSYSID: number
      readonly ESME_RINVSYSTYP: number
      readonly ESME_RBINDFAIL: number
      readonly ESME_RMSGQFUL: number
      readonly ESME_RTHROTTLED: number
      readonly ESME_RSYSERR: number
      readonly ESME_RINVDSTADR: number
      readonly [name: string]: number
    }
    /** ASCII is the GSM 03.38 default alphabet, one octet per septet (data_coding 0). */
    encodings: { ASCII: Encoding; UCS2: Encoding }
  }

  const smpp: Smpp
  export default smpp
}
