/**
 * The shape of one configuration variable's definition, and the builders of the common kinds
 * (a whole number in a range, one of a list, a flag, a URL, a Sui object ID). A builder
 * gives what the reference shows (the values, the default) and the parser from one place, so
 * the two cannot drift.
 */
import type { Config } from './config-type.ts'
import { type Env, given, objectId, oneOf, urlValue, wholeNumber } from './config-values.ts'

export type { Env }

export interface Setting {
  /** The environment variable. */
  name: string
  /** Where the reference lists it (docs/configuration.md). */
  section: string
  /** What it takes, for the reference (Markdown). */
  values: string
  /** Its default for the reference: a value, or how it is derived (Markdown). */
  default: string
  /** What it does, for operators (Markdown). */
  description: string
  /**
   * Reads it into the Config fields it sets, given the ones read before it (definitions are
   * read in order, so a default may follow an earlier setting). Absent: read elsewhere, see
   * readBy.
   */
  read?: (env: Env, name: string, before: Partial<Config>) => Partial<Config>
  /** Where a variable without `read` is read (another setting's parser, or a module of its own). */
  readBy?: string
}

type Built = Pick<Setting, 'values' | 'default' | 'read'>
/** The fields a value of type T may fill. */
type FieldOf<T> = { [K in keyof Config]-?: [T] extends [Config[K]] ? K : never }[keyof Config]

const code = (value: string | number): string => `\`${value}\``

/** A whole number from min to max; the fallback may be computed when read (MAX_CONNECTIONS). */
export function whole(field: FieldOf<number>, fallback: number | { text: string; value: () => number }, min: number, max: number): Built {
  const value = typeof fallback === 'number' ? () => fallback : fallback.value
  return {
    values: `${min}-${max}`,
    default: typeof fallback === 'number' ? code(fallback) : fallback.text,
    read: (env, name) => ({ [field]: wholeNumber(env, name, value(), min, max) }),
  }
}

export function choice<T extends string>(field: FieldOf<T>, allowed: readonly T[], fallback: T): Built {
  return {
    values: allowed.map(code).join(' | '),
    default: code(fallback),
    read: (env, name) => ({ [field]: oneOf(env, name, allowed, fallback) }),
  }
}

/** `true` or `false`, default false. */
export function flag(field: FieldOf<boolean>): Built {
  return {
    values: '`true` | `false`',
    default: '`false`',
    read: (env, name) => ({ [field]: oneOf(env, name, ['true', 'false'] as const, 'false') === 'true' }),
  }
}

/** A URL of one of these schemes; unset: undefined. */
export function link(field: FieldOf<string | undefined>, protocols: readonly string[]): Built {
  return {
    values: `URL (${protocols.map((p) => p.slice(0, -1)).join(', ')})`,
    default: 'unset',
    read: (env, name) => ({ [field]: urlValue(env, name, undefined, protocols) }),
  }
}

/** Free text; unset (or empty): undefined. */
export function text(field: FieldOf<string | undefined>, values = 'text'): Built {
  return { values, default: 'unset', read: (env, name) => ({ [field]: given(env, name) }) }
}

/** A Sui object ID, by default the published one of the chosen network (or another setting's). */
export function suiObject(field: FieldOf<string>, fallback: (before: Partial<Config>) => string, defaultText = 'per `SUI_NETWORK`'): Built {
  return {
    values: '`0x` + 64 hex digits',
    default: defaultText,
    read: (env, name, before) => ({ [field]: objectId(env, name, fallback(before)) }),
  }
}
