/** A stable anchor for an operation: `post-numsys-approval-phone` (links to /docs#<anchor> last). */
export function anchorOf(method: string, path: string): string {
  return `${method}-${path.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '')}`.toLowerCase()
}
