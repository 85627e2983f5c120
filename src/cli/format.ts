import pc from 'picocolors';
import type { AssembledContext } from '../context/assemble.ts';
import type { Colors } from './context.ts';

/** `--color always|never|auto` (`--no-color` is never); auto: a terminal, unless NO_COLOR is set. */
export function colorsFor(stream: NodeJS.WriteStream, flag: boolean | string | undefined): Colors {
  const enabled =
    flag === 'always' ||
    (flag !== false &&
      flag !== 'never' &&
      !process.env.NO_COLOR &&
      (Boolean(stream.isTTY) || Boolean(process.env.FORCE_COLOR)));
  return pc.createColors(enabled);
}

/**
 * Characters a terminal acts on instead of showing: C0 controls but tab (ESC starts the sequences that clear the
 * screen, retitle the window or write the clipboard), DEL, C1 controls, the line and paragraph separators, and the
 * bidirectional controls (overrides, embeddings, isolates and marks) that make code read otherwise than it runs.
 */
const UNSAFE =
  /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const UNSAFE_ANY = new RegExp(UNSAFE.source);

function escapeChar(ch: string): string {
  const code = ch.charCodeAt(0);
  if (ch === '\n') return '\\n';
  if (ch === '\r') return '\\r';
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
}

/**
 * Text as a terminal should print it: every control character shown escaped (`\x1b`), as ripgrep and git do. With
 * `lines`, text of several lines (a prompt, a streamed answer, a diff, an error) keeps its line ends (`\n`, `\r\n`);
 * a lone `\r`, which would move the cursor back over what was printed, is escaped. Each character is replaced on its
 * own, so text written in pieces (a stream) is escaped piece by piece: an escape sequence cut between two pieces
 * loses its ESC in the first.
 */
export function visible(text: string, options?: { lines?: boolean }): string {
  const lines = options?.lines === true;
  return text.replace(UNSAFE, (ch: string, at: number) =>
    lines && (ch === '\n' || (ch === '\r' && text[at + 1] === '\n')) ? ch : escapeChar(ch),
  );
}

/** A path for text output: quoted, with its unsafe characters escaped, when it holds any (git's quoting of paths). */
export function safePath(path: string): string {
  if (!UNSAFE_ANY.test(path) && !path.includes('"')) return path;
  return `"${visible(path).replace(/"/g, '\\"')}"`;
}

/** Query words in a line, marked the way grep marks matches. */
export function highlightTerms(line: string, terms: readonly string[], mark: (s: string) => string): string {
  if (!terms.length) return line;
  const escaped = terms
    .filter((t) => t.length > 1)
    .sort((a, b) => b.length - a.length)
    .map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  if (!escaped.length) return line;
  return line.replace(new RegExp(escaped.join('|'), 'gi'), (m) => mark(m));
}

/** A unified diff, coloured by line, every line terminal-safe (`visible`): a diff shows what a file or a model wrote. */
export function colorDiff(diff: string, c: Colors): string {
  return `${diff
    .split('\n')
    .map((line) => visible(line))
    .map((l) =>
      l.startsWith('+++') || l.startsWith('---')
        ? c.bold(l)
        : l.startsWith('+')
          ? c.green(l)
          : l.startsWith('-')
            ? c.red(l)
            : l.startsWith('@@')
              ? c.cyan(l)
              : l,
    )
    .join('\n')
    .replace(/\n*$/, '')}\n`;
}

/** `[n] path:start-end  (tokens, why)` for each block sent, paths terminal-safe (`safePath`). */
export function formatSources(ctx: AssembledContext): string {
  const lines = ctx.blocks.map(
    (b) =>
      `[${b.n}] ${safePath(b.path)}:${b.startLine}-${b.endLine}  ${b.tokens} tokens${b.reason === 'retrieved' ? '' : `, ${b.reason}`}${b.truncated ? ', cut at its share' : ''}`,
  );
  if (ctx.map) lines.push(`map: ${ctx.map.entries.length} files, ${ctx.map.tokens} tokens`);
  lines.push(
    `total: ${ctx.tokens.prompt} prompt tokens: ${ctx.tokens.blocks} code + ${ctx.tokens.map} map within a ${ctx.budget.hard}-token context budget, ${ctx.packing} packing`,
  );
  if (ctx.skipped.length)
    lines.push(
      `did not fit: ${ctx.skipped.length} (${ctx.skipped
        .slice(0, 3)
        .map((s) => safePath(s.path))
        .join(', ')}${ctx.skipped.length > 3 ? ', …' : ''})`,
    );
  return `${lines.join('\n')}\n`;
}

/** The blocks sent, as JSON output lists them. */
export function sources(ctx: AssembledContext) {
  return ctx.blocks.map(({ n, path, startLine, endLine, tokens, reason }) => ({
    n,
    path,
    startLine,
    endLine,
    tokens,
    reason,
  }));
}
