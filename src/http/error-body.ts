/** The service's one error shape (ErrorBody in the OpenAPI document), for every error answer. */
import type { ErrorCode } from '../errors.ts'

export interface ErrorBody { success: false; code: ErrorCode; error: string; message: string; field?: string; requestId: string }

export function errorBody(code: ErrorCode, text: string, requestId: string, field?: string): ErrorBody {
  const body: ErrorBody = { success: false, code, error: text, message: text, requestId }
  if (field !== undefined) body.field = field
  return body
}
