/**
 * RFC 4180 CSV, fed in chunks: quoted fields with "" escapes and line breaks, CRLF or LF.
 * Each record is reported with the 1-based line it starts on.
 */
export class CsvParser {
  #cells: string[] = []
  #cell = ''
  #quoted = false
  /** Inside quotes, a quote was just seen: either the closing quote or half of "". */
  #quoteSeen = false
  #line = 1
  #recordLine = 1

  push(text: string, emit: (cells: string[], line: number) => void): void {
    let start = 0
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i)
      if (this.#quoted) {
        if (this.#quoteSeen) {
          this.#quoteSeen = false
          if (c === 34) { this.#cell += '"'; start = i + 1; continue }
          this.#quoted = false // the previous quote closed the field; handle c below
        } else if (c === 34) {
          this.#cell += text.slice(start, i)
          this.#quoteSeen = true
          start = i + 1
          continue
        } else {
          if (c === 10) this.#line++
          continue
        }
      }
      if (c === 34 && this.#cell === '' && start === i) {
        this.#quoted = true
        start = i + 1
      } else if (c === 44) {
        this.#cells.push(this.#cell + text.slice(start, i))
        this.#cell = ''
        start = i + 1
      } else if (c === 10) {
        // CRLF: the CR may have arrived at the end of the previous chunk.
        const last = this.#cell + text.slice(start, i)
        this.#cells.push(last.endsWith('\r') ? last.slice(0, -1) : last)
        emit(this.#cells, this.#recordLine)
        this.#cells = []
        this.#cell = ''
        start = i + 1
        this.#line++
        this.#recordLine = this.#line
      }
    }
    this.#cell += text.slice(start)
  }

  /** The last record when the input does not end with a line break. */
  end(emit: (cells: string[], line: number) => void): void {
    if (this.#cells.length === 0 && this.#cell === '') return
    this.#cells.push(this.#cell.replace(/\r$/, ''))
    emit(this.#cells, this.#recordLine)
    this.#cells = []
    this.#cell = ''
  }
}
