/**
 * Scores the secret redactor on the out-of-sample corpus of bench/secrets-corpus.ts (not a test: it reports).
 *
 *   node --import tsx bench/secrets-eval.ts [--json] [--all] [--no-hostile] [--quiet]
 *
 * A secret is caught when the output no longer holds it and no 8-character piece of it survives (pieces that lie
 * inside a format's public prefix, or that the file holds elsewhere anyway, do not count). A look-alike is wrongly
 * redacted when the output differs from the input at all. The report gives both per family (the value's format),
 * per placement (how it sits in the file) and per shape (`family @ placement`; every shape with --all, else those
 * with a miss), then every leaked and every wrongly changed case with its line.
 *
 * It then times the redactor on hostile single lines of 1 MB, each in a child process that is killed after 20 s.
 */
import { spawn } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { redactSecrets } from '../src/chunk/redact.ts';
import { buildCorpus, type Case, PUBLIC_PARTS } from './secrets-corpus.ts';

type Redact = typeof redactSecrets;

/** The redactor, loaded as indexing loads it. */
async function loadRedactor(): Promise<Redact> {
  return redactSecrets;
}

// ---------------------------------------------------------------------------------------------------------------------
// Hostile inputs

const MB = 1_000_000;
const fill = (unit: string, prefix = ''): string =>
  (prefix + unit.repeat(Math.ceil(MB / unit.length))).slice(0, MB);
function pseudoBase64(): string {
  const set = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  let s = 0x12345;
  let out = '';
  for (let i = 0; i < MB; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    out += set[(s >>> 16) & 63];
  }
  return out;
}
const HOSTILE: Record<string, () => string> = {
  'mysql -p-p-p-p...': () => fill('-p', 'mysql '),
  'a x 1e6': () => 'a'.repeat(MB),
  'password=password=...': () => fill('password='),
  'base64 of 1 MB': pseudoBase64,
  '"password": " repeated': () => fill('"password": "'),
  'A x 1e6 (AKIA-like run)': () => fill('A', 'AKIA'),
  'spaces then x': () => ' '.repeat(MB - 1) + 'x',
  'export A=export A=...': () => fill('export A='),
  'postgres://a: repeated (no @)': () => fill('postgres://a:'),
  'BEGIN PRIVATE KEY, no END': () => fill('MIIEvQIBADANBgkqhkiG9w0B', '-----BEGIN PRIVATE KEY-----'),
  'key: key: key: ...': () => fill('key: '),
  '\\" repeated': () => fill('\\"'),
};
const LIMIT_MS = 20_000;

/** Child mode: redact one hostile input, print `ready` when about to start and the result as JSON. */
async function hostileOne(name: string): Promise<void> {
  const redact = await loadRedactor();
  const input = HOSTILE[name]!();
  await redact('warm up: password=hunter2hunter2 and ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa');
  process.stdout.write('ready\n');
  const t0 = performance.now();
  const out = await redact(input);
  const ms = performance.now() - t0;
  const result = JSON.stringify({ ms, changed: out.text !== input, outLength: out.text.length });
  // the redactor may hold the event loop open a while after its last call: exit once the answer is written
  process.stdout.write(`${result}\n`, () => process.exit(0));
}

interface Timing {
  name: string;
  ms: number | null;
  note: string;
}

function timeOne(name: string): Promise<Timing> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [...process.execArgv, fileURLToPath(import.meta.url), '--hostile-one', name],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    // the load of the module and the input is not timed: the 20 s start when the child says it is ready
    const startup = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (!timer && out.includes('ready\n')) {
        clearTimeout(startup);
        timer = setTimeout(() => {
          timedOut = true;
          child.kill('SIGKILL');
        }, LIMIT_MS);
      }
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('close', (code) => {
      clearTimeout(startup);
      if (timer) clearTimeout(timer);
      if (timedOut) return resolve({ name, ms: null, note: `>${LIMIT_MS / 1000} s (killed)` });
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (!line)
        return resolve({
          name,
          ms: null,
          note: `failed (exit ${code}): ${err.trim().split('\n').pop() ?? ''}`,
        });
      const r = JSON.parse(line) as { ms: number; changed: boolean; outLength: number };
      resolve({ name, ms: r.ms, note: r.changed ? `redacted, ${r.outLength} chars out` : 'unchanged' });
    });
  });
}

async function timeHostile(): Promise<Timing[]> {
  const names = Object.keys(HOSTILE);
  const results: Timing[] = new Array(names.length);
  let next = 0;
  const workers = Math.max(1, Math.min(3, Math.floor(availableParallelism() / 2)));
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < names.length) {
        const i = next++;
        results[i] = await timeOne(names[i]!);
      }
    }),
  );
  return results;
}

// ---------------------------------------------------------------------------------------------------------------------
// Scoring

/** Where a piece of the secret survives in the output, or null when none does. */
function survivor(secret: string, input: string, output: string): string | null {
  if (output.includes(secret)) return secret;
  const masked = new Array<boolean>(secret.length).fill(false);
  for (const p of PUBLIC_PARTS) {
    for (let at = secret.indexOf(p); at >= 0; at = secret.indexOf(p, at + 1)) {
      for (let k = at; k < at + p.length; k++) masked[k] = true;
    }
  }
  const elsewhere = input.split(secret).join('\u0000');
  for (let i = 0; i + 8 <= secret.length; i++) {
    if (masked.slice(i, i + 8).every(Boolean)) continue;
    const w = secret.slice(i, i + 8);
    if (elsewhere.includes(w)) continue;
    if (output.includes(w)) {
      let j = i + 8;
      while (j < secret.length && output.includes(secret.slice(i, j + 1))) j++;
      return secret.slice(i, j);
    }
  }
  return null;
}

interface Result {
  c: Case;
  /** secret: the piece that survived (null: caught); look-alike: the first changed line (null: unchanged). */
  miss: { before: string; after: string; piece?: string } | null;
  ms: number;
}

interface Tally {
  total: number;
  miss: number;
}

const family = (shape: string): string => shape.split(' @ ')[0]!;
const placement = (shape: string): string => shape.split(' @ ')[1] ?? '';

function tally(results: Result[], key: (r: Result) => string): Map<string, Tally> {
  const m = new Map<string, Tally>();
  for (const r of results) {
    const k = key(r);
    const t = m.get(k) ?? { total: 0, miss: 0 };
    t.total++;
    if (r.miss) t.miss++;
    m.set(k, t);
  }
  return m;
}

const pct = (a: number, b: number): string => (b ? `${((100 * a) / b).toFixed(1)}%` : '-');
const clip = (s: string, n = 150): string => {
  const one = s.replace(/\t/g, '  ');
  return one.length > n ? `${one.slice(0, n - 1)}…` : one;
};

function table(title: string, rows: [string, Tally][], good: string, bad: string, compact = true): string[] {
  const out = [`${title}`];
  const w = Math.min(48, Math.max(...rows.map(([k]) => k.length), 8));
  const cells = rows.map(
    ([k, t]) => `${k.padEnd(w)} ${String(t.total - t.miss).padStart(4)}/${String(t.total).padEnd(4)}`,
  );
  if (!compact) {
    for (const [k, t] of rows)
      out.push(`  ${k.padEnd(w)}  ${good} ${t.total - t.miss}/${t.total}  ${bad} ${t.miss}`);
    return out;
  }
  const cols = Math.max(1, Math.floor(150 / (w + 13)));
  for (let i = 0; i < cells.length; i += cols) out.push(`  ${cells.slice(i, i + cols).join('   ')}`);
  return out;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      json: { type: 'boolean', default: false },
      all: { type: 'boolean', default: false },
      'no-hostile': { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
      'hostile-one': { type: 'string' },
    },
  });
  if (values['hostile-one']) return hostileOne(values['hostile-one']);

  const redact = await loadRedactor();
  const cases = buildCorpus();
  const results: Result[] = [];
  const t0 = performance.now();
  for (const c of cases) {
    const s = performance.now();
    const out = (await redact(c.text, { path: c.file })).text;
    const ms = performance.now() - s;
    let miss: Result['miss'] = null;
    if (c.kind === 'secret') {
      const piece = survivor(c.secret!, c.text, out);
      if (piece !== null) {
        const line = out.split('\n').find((l) => l.includes(piece)) ?? '';
        miss = { before: c.text.split('\n')[c.line - 1] ?? '', after: line, piece };
      }
    } else if (out !== c.text) {
      const a = c.text.split('\n');
      const b = out.split('\n');
      let i = 0;
      while (i < Math.max(a.length, b.length) && a[i] === b[i]) i++;
      miss = { before: a[i] ?? '', after: b[i] ?? '' };
    }
    results.push({ c, miss, ms });
  }
  const totalMs = performance.now() - t0;

  const secrets = results.filter((r) => r.c.kind === 'secret');
  const looks = results.filter((r) => r.c.kind === 'lookalike');
  const leaked = secrets.filter((r) => r.miss);
  const wrong = looks.filter((r) => r.miss);
  const shapes = (rs: Result[]) => new Set(rs.map((r) => r.c.shape)).size;
  const byShape = tally(results, (r) => r.c.shape);
  const timings = values['no-hostile'] ? [] : await timeHostile();

  if (values.json) {
    const shapeRows = [...byShape].map(([shape, t]) => {
      const kind = results.find((r) => r.c.shape === shape)!.c.kind;
      return kind === 'secret'
        ? { shape, kind, total: t.total, caught: t.total - t.miss, leaked: t.miss }
        : { shape, kind, total: t.total, wrong: t.miss };
    });
    const summary = {
      secrets: {
        total: secrets.length,
        shapes: shapes(secrets),
        caught: secrets.length - leaked.length,
        leaked: leaked.length,
      },
      lookalikes: { total: looks.length, shapes: shapes(looks), wrong: wrong.length },
      // missed: leaked for a secret family, wrongly changed for a look-alike one
      families: Object.fromEntries(
        [...tally(results, (r) => family(r.c.shape))].map(([k, t]) => [
          k,
          { total: t.total, missed: t.miss },
        ]),
      ),
      placements: Object.fromEntries(
        [...tally(secrets, (r) => placement(r.c.shape))].map(([k, t]) => [
          k,
          { total: t.total, leaked: t.miss },
        ]),
      ),
      shapes: shapeRows,
      leaked: leaked.map((r) => ({
        shape: r.c.shape,
        file: r.c.file,
        line: r.c.line,
        text: r.miss!.before,
        piece: r.miss!.piece,
      })),
      wrong: wrong.map((r) => ({
        shape: r.c.shape,
        file: r.c.file,
        line: r.c.line,
        before: r.miss!.before,
        after: r.miss!.after,
      })),
      corpusMs: Math.round(totalMs),
      hostile: timings.map((t) => ({
        name: t.name,
        ms: t.ms === null ? null : Math.round(t.ms),
        note: t.note,
      })),
    };
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    return;
  }

  const out: string[] = [];
  out.push(
    `corpus: ${secrets.length} secrets in ${shapes(secrets)} shapes, ${looks.length} look-alikes in ${shapes(looks)} shapes (${cases.length} files, redacted in ${(totalMs / 1000).toFixed(1)} s)`,
  );
  out.push(
    `secrets caught ${secrets.length - leaked.length}/${secrets.length} (${pct(secrets.length - leaked.length, secrets.length)}), leaked ${leaked.length}`,
  );
  out.push(
    `look-alikes wrongly changed ${wrong.length}/${looks.length} (${pct(wrong.length, looks.length)})`,
  );

  const provider = secrets.filter((r) => !family(r.c.shape).startsWith('generic-'));
  const generic = secrets.filter((r) => family(r.c.shape).startsWith('generic-'));
  const NAMELESS = new Set(['markdown-prose', 'log-line', 'positional-arg', 'code-comment', 'bare-line']);
  const pNamed = provider.filter((r) => !NAMELESS.has(placement(r.c.shape)));
  const pBare = provider.filter((r) => NAMELESS.has(placement(r.c.shape)));
  const caught = (rs: Result[]) => `${rs.filter((r) => !r.miss).length}/${rs.length}`;
  out.push('');
  out.push(
    `provider formats: caught ${caught(provider)} (beside a name ${caught(pNamed)}, with no name ${caught(pBare)}); generic values under secret names: caught ${caught(generic)}`,
  );

  const fam = [...tally(provider, (r) => family(r.c.shape))].filter(([, t]) => values.all || t.miss > 0);
  out.push('');
  out.push(
    ...table(`provider formats${values.all ? '' : ' with a leak'} (caught/total):`, fam, 'caught', 'leaked'),
  );
  out.push('');
  out.push(
    ...table(
      'generic value kinds (caught/total):',
      [...tally(generic, (r) => family(r.c.shape))],
      'caught',
      'leaked',
    ),
  );
  const gp = [...tally(generic, (r) => placement(r.c.shape))].filter(([, t]) => values.all || t.miss > 0);
  out.push('');
  out.push(
    ...table(`generic placements${values.all ? '' : ' with a leak'} (caught/total):`, gp, 'caught', 'leaked'),
  );
  const pp = [...tally(provider, (r) => placement(r.c.shape))];
  out.push('');
  out.push(...table('provider placements (caught/total):', pp, 'caught', 'leaked'));
  out.push('');
  out.push(
    ...table(
      'look-alike categories (kept/total):',
      [...tally(looks, (r) => family(r.c.shape).replace('lookalike:', ''))],
      'kept',
      'changed',
    ),
  );
  if (values.all) {
    out.push('');
    out.push('every shape:');
    for (const [shape, t] of byShape) out.push(`  ${shape.padEnd(60)} ${t.total - t.miss}/${t.total}`);
  }

  if (!values.quiet) {
    out.push('');
    out.push(`leaked (${leaked.length}): shape | file:line | the line (surviving piece)`);
    for (const r of leaked) {
      const piece = r.miss!.piece!;
      const what = piece === r.c.secret ? 'whole' : `piece ${clip(piece, 40)}`;
      out.push(`  ${r.c.shape} | ${r.c.file}:${r.c.line} | ${clip(r.miss!.before.trim())} (${what})`);
    }
    out.push('');
    out.push(`wrongly changed look-alikes (${wrong.length}): shape | file:line | before => after`);
    for (const r of wrong) {
      out.push(
        `  ${r.c.shape} | ${r.c.file}:${r.c.line} | ${clip(r.miss!.before.trim(), 110)} => ${clip(r.miss!.after.trim(), 110)}`,
      );
    }
  }

  if (timings.length) {
    out.push('');
    out.push(`hostile single lines of 1 MB (limit ${LIMIT_MS / 1000} s each, in a child process):`);
    for (const t of timings) {
      out.push(
        `  ${t.name.padEnd(34)} ${t.ms === null ? '' : `${t.ms.toFixed(0).padStart(7)} ms  `}${t.note}`,
      );
    }
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

await main();
// as above: do not wait for whatever the redactor left running
process.stdout.write('', () => process.exit(0));
