import chalk from 'chalk';
import { Marked } from 'marked';
import { markedTerminal } from 'marked-terminal';
import stringWidth from 'string-width';
import { visible } from './format.ts';

const renderers = new Map<number, Marked>();

/** Markdown to terminal text (marked + marked-terminal): headings, emphasis, lists, tables, code blocks. */
export function renderMarkdown(markdown: string, options: { color: boolean; width: number }): string {
  // marked-terminal styles through chalk's shared instance: its level follows quarry's colour decision
  chalk.level = options.color ? (Math.max(1, chalk.level) as 1) : 0;
  // one renderer per terminal width, not one per block
  let marked = renderers.get(options.width);
  if (!marked) {
    marked = new Marked();
    marked.use(markedTerminal({ reflowText: false, width: options.width, tab: 2 }) as never);
    renderers.set(options.width, marked);
  }
  const out = marked.parse(markdown) as string;
  // citations stand out: [3] src/api.ts:10-20
  return options.color ? out.replace(/\[(\d+)\]/g, (m) => chalk.magenta(m)) : out;
}

/**
 * Rows a text takes on a terminal `columns` wide, the cursor left after its last character. Widths are the
 * terminal's (string-width: a CJK character or an emoji takes two columns, colour codes none); counting UTF-16 units
 * left a long CJK line's raw copy on screen after the redraw.
 */
export function rowsOf(text: string, columns: number): number {
  let rows = 0;
  for (const line of text.split('\n')) {
    const width = stringWidth(line.replace(/\t/g, '        '));
    rows += Math.max(1, Math.ceil(width / columns));
  }
  return rows;
}

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/**
 * Shows an answer as it streams: a spinner until the first token, then every token at once, raw; each markdown block
 * (a paragraph, a list, a fenced code block) is redrawn rendered as soon as it is complete. A block taller than the
 * screen stays as it streamed (the rows above the screen cannot be redrawn). Off a terminal it writes the text as it
 * comes, not rendered. On both, control characters in the text (a model repeats what it read: a clipboard write, a
 * screen clear, a bidi override) are shown escaped, never acted on.
 */
export class StreamingMarkdown {
  /** The current block's text, shown raw, not yet rendered. */
  private raw = '';
  private spinner: NodeJS.Timeout | undefined;
  private readonly tty: boolean;

  constructor(
    private readonly out: NodeJS.WriteStream,
    private readonly options: { color: boolean },
  ) {
    this.tty = Boolean(out.isTTY);
  }

  /** The spinner, while the model has said nothing yet. */
  waiting(label = 'thinking'): void {
    if (!this.tty || this.spinner) return;
    let i = 0;
    const draw = () => this.out.write(`\r${FRAMES[i++ % FRAMES.length]} ${label}…`);
    draw();
    this.spinner = setInterval(draw, 80);
  }

  /** Stops the spinner (before a note is printed, or an error). */
  idle(): void {
    if (!this.spinner) return;
    clearInterval(this.spinner);
    this.spinner = undefined;
    this.out.write('\r\x1b[K');
  }

  /** A piece of the answer; its control characters are shown escaped (`visible`), on a terminal or off it. */
  push(piece: string): void {
    this.idle();
    if (!piece) return;
    const text = visible(piece, { lines: true });
    this.out.write(text);
    if (!this.tty) return;
    this.raw += text;
    for (;;) {
      const end = this.blockEnd();
      if (end < 0) break;
      this.redraw(end);
    }
  }

  end(): void {
    this.idle();
    if (this.tty && this.raw.trim()) this.redraw(this.raw.length, true);
    else if (this.tty && this.raw) this.out.write('\n');
    else if (!this.tty) this.out.write('\n');
    this.raw = '';
  }

  /**
   * Where the first complete block of `raw` ends (after its blank line or its closing fence), or -1. `raw` always
   * starts at a block's start, so the scan starts outside a fence.
   */
  private blockEnd(): number {
    let at = 0;
    let fence = false;
    for (;;) {
      const nl = this.raw.indexOf('\n', at);
      if (nl < 0) return -1;
      const line = this.raw.slice(at, nl);
      if (/^\s*(```|~~~)/.test(line)) {
        if (fence) return nl + 1;
        fence = true;
      } else if (!fence && line.trim() === '' && at > 0) return nl + 1;
      at = nl + 1;
    }
  }

  /** Replaces the raw text of the block `raw[0, end)` (and what followed it) with the rendered block. */
  private redraw(end: number, last = false): void {
    const block = this.raw.slice(0, end);
    const rest = this.raw.slice(end);
    this.raw = rest;
    if (!block.trim()) return;
    const columns = this.out.columns || 80;
    const rows = rowsOf(block + rest, columns);
    // what scrolled off the top cannot be redrawn: leave such a block as it streamed
    if (rows >= (this.out.rows || 24)) {
      if (last && !block.endsWith('\n')) this.out.write('\n');
      return;
    }
    const rendered = renderMarkdown(block, { color: this.options.color, width: columns }).replace(/\n+$/, '');
    this.out.write(`\r${rows > 1 ? `\x1b[${rows - 1}A` : ''}\x1b[J${rendered}\n${last ? '' : '\n'}${rest}`);
  }
}
