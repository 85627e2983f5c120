import { lstatSync, readFileSync, realpathSync } from 'node:fs';
import { join, sep } from 'node:path';
import { redactSecrets } from '../../chunk/redact.ts';
import type { QuarryConfig } from '../../config/config.ts';
import { QuarryError } from '../../errors.ts';
import { decodeText, redactionOf } from '../../indexing/process-file.ts';
import type { Store } from '../../store/types.ts';

/** A text's lines, without the empty one after its last newline. */
export function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** A path as the index knows it: relative, POSIX, inside the root (BAD_INPUT otherwise). */
export function indexedPath(raw: string): string {
  const rel = raw.replace(/^\.\//, '');
  if (!rel || rel.includes('\0') || rel.includes('\\') || rel.startsWith('/'))
    throw new QuarryError('BAD_INPUT', `${raw} is not a path from the project root (for example src/api.ts)`);
  if (rel.split('/').some((p) => p === '' || p === '.' || p === '..'))
    throw new QuarryError('BAD_INPUT', `${raw} is not a path from the project root (for example src/api.ts)`);
  return rel;
}

/**
 * Files' lines: the text the store keeps, else the file on disk, redacted whole as the index holds it (with its path:
 * code or config) before any slice of it is taken, so a rule that needs the lines around a value (a key block,
 * `name:` / `value:`) holds for every slice. `raw`: a file on disk as written, for a reader that redacts whole every
 * file it shows (grep: most files it reads match nothing, and are shown nowhere).
 */
export async function readProjectLines(
  store: Store,
  config: QuarryConfig,
  diskRoot: string | null,
  paths: string[],
  { raw = false }: { raw?: boolean } = {},
): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  const stored = store.content ? await store.content.read(paths) : new Map<string, string>();
  const redact = !raw && redactionOf(config) !== 'off';
  for (const p of paths) {
    let text = stored.get(p) ?? (diskRoot ? readInside(diskRoot, p) : undefined);
    if (typeof text !== 'string') continue;
    if (redact && !stored.has(p)) text = (await redactSecrets(text, { path: p })).text;
    out.set(p, splitLines(text));
  }
  return out;
}

/**
 * A file's text under `root`, never through a symbolic link or out of the root: null when the path is a link or
 * leads out, undefined when it cannot be read.
 */
export function readInside(root: string, rel: string): string | null | undefined {
  const abs = join(root, rel);
  try {
    if (lstatSync(abs).isSymbolicLink()) return null;
    const real = realpathSync(abs);
    if (!real.startsWith(realpathSync(root) + sep)) return null;
    return decodeText(readFileSync(real));
  } catch {
    return undefined;
  }
}
