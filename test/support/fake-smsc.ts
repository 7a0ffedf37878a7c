import type { AddressInfo } from 'node:net'
import smpp, { type PDU, type Session } from 'smpp'

/**
 * A local SMSC made with the smpp package's own server side, for the SMPP sender's tests:
 * it takes binds with system_id `kns` and password `secret`, records what it receives, and
 * answers submit_sm as `onSubmit` says (default: accepted). It listens on `host` (loopback
 * unless told: the cluster test's nodes reach it on the bridge address).
 */
export interface FakeSmsc {
  port: number
  url: (password?: string) => string
  binds: PDU[]
  submits: PDU[]
  unbinds: number
  enquireLinks: number
  /** What to do with a submit_sm: the command_status to answer, or 'silent' to never answer. */
  onSubmit: (pdu: PDU, session: Session) => number | 'silent'
  answerEnquireLink: boolean
  answerBind: boolean
  /** Connections open now. */
  connections(): number
  /** Drops every connection, as a restarting SMSC or a broken network would. */
  dropAll(): Promise<void>
  close(): Promise<void>
}

export async function startSmsc(host = '127.0.0.1'): Promise<FakeSmsc> {
  const server = smpp.createServer((session) => {
    session.on('error', () => {}) // a client going away mid-PDU is not the test's business
    for (const command of ['bind_transmitter', 'bind_transceiver']) {
      session.on(command, (pdu: PDU) => {
        smsc.binds.push(pdu)
        if (!smsc.answerBind) return
        const ok = pdu.system_id === 'kns' && pdu.password === 'secret'
        session.send(pdu.response(ok ? {} : { command_status: smpp.errors.ESME_RINVPASWD }))
        if (!ok) session.close()
      })
    }
    session.on('submit_sm', (pdu: PDU) => {
      smsc.submits.push(pdu)
      const status = smsc.onSubmit(pdu, session)
      if (status !== 'silent') session.send(pdu.response(status === 0 ? { message_id: `m${smsc.submits.length}` } : { command_status: status }))
    })
    session.on('enquire_link', (pdu: PDU) => {
      smsc.enquireLinks++
      if (smsc.answerEnquireLink) session.send(pdu.response())
    })
    session.on('unbind', (pdu: PDU) => {
      smsc.unbinds++
      session.send(pdu.response())
      session.close()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, host, resolve))
  const port = (server.address() as AddressInfo).port
  const closeSessions = () => Promise.all(server.sessions.map((session) => new Promise<void>((resolve) => session.destroy(resolve))))
  const smsc: FakeSmsc = {
    port,
    url: (password = 'secret') => `smpp://kns:${password}@${host}:${port}`,
    binds: [],
    submits: [],
    unbinds: 0,
    enquireLinks: 0,
    onSubmit: () => 0,
    answerEnquireLink: true,
    answerBind: true,
    connections: () => server.sessions.length,
    dropAll: async () => { await closeSessions() },
    close: async () => {
      await closeSessions()
      await new Promise((resolve) => server.close(resolve))
    },
  }
  return smsc
}

/** Waits until `condition()` holds, polling, or fails after `ms`. */
export async function until(condition: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms
  while (!condition()) {
    if (Date.now() > end) throw new Error('condition not reached in time')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}
