// What redaction changes in real code: every text file under the given folders is redacted as indexing does it
// (chunk/redact.ts), and the lines that changed are counted by the kind of finding, with a sample to read. Real
// repositories hold few real secrets: most changed lines are look-alikes the rules took (false positives) or test
// fixtures written to look like secrets. Also the cost: MB per second over ordinary code.
//
//   node --import tsx bench/secrets-realcode.ts DIR... [--sample 40] [--json]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { findSecrets } from '../src/chunk/redact.ts';

const args = process.argv.slice(2);
const sampleAt = args.indexOf('--sample');
const sampleSize = sampleAt >= 0 ? Number(args[sampleAt + 1]) : 40;
const json = args.includes('--json');
const roots = args.filter((a, i) => !a.startsWith('--') && (sampleAt < 0 || i !== sampleAt + 1));
if (!roots.length) {
  console.error('usage: bench/secrets-realcode.ts DIR... [--sample N] [--json]');
  process.exit(2);
}

const TEXT =
  /\.(?:[jt]sx?|mjs|cjs|py|go|rs|java|kt|kts|scala|c|h|cc|cpp|hpp|cs|rb|php|swift|m|lua|ex|exs|hs|ml|dart|sh|bash|zsh|ps1|r|jl|pl|clj|zig|sql|ya?ml|toml|ini|cfg|conf|json|xml|properties|gradle|md|rst|txt|env|tf|hcl|dockerfile|mk)$/i;

function* files(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === '.git' || e.name === 'node_modules') continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* files(p);
    else if (e.isFile() && (TEXT.test(e.name) || /^(?:Makefile|Dockerfile)$/.test(e.name))) yield p;
  }
}

let bytes = 0;
let fileCount = 0;
let changedFiles = 0;
let changedLines = 0;
const byKind = new Map<string, number>();
const samples: Array<{ file: string; line: string; kind: string }> = [];
let seen = 0;
const started = performance.now();
for (const root of roots)
  for (const f of files(root)) {
    if (statSync(f).size > 1024 * 1024) continue;
    const text = readFileSync(f, 'utf8');
    bytes += text.length;
    fileCount++;
    const spans = await findSecrets(text, { path: f });
    if (!spans.length) continue;
    changedFiles++;
    const lines = new Set<number>();
    for (const s of spans) {
      const line = text.slice(0, s.start).split('\n').length;
      if (lines.has(line)) continue;
      lines.add(line);
      changedLines++;
      byKind.set(s.name, (byKind.get(s.name) ?? 0) + 1);
      // reservoir sample of changed lines, to read
      seen++;
      const item = {
        file: relative(root, f),
        line: text.split('\n')[line - 1]!.trim().slice(0, 160),
        kind: s.name,
      };
      if (samples.length < sampleSize) samples.push(item);
      else {
        const j = Math.floor((((seen * 2654435761) % 2 ** 32) / 2 ** 32) * seen);
        if (j < sampleSize) samples[j] = item;
      }
    }
  }
const secs = (performance.now() - started) / 1000;
const summary = {
  files: fileCount,
  mb: Number((bytes / 1e6).toFixed(1)),
  seconds: Number(secs.toFixed(1)),
  mbPerSecond: Number((bytes / 1e6 / secs).toFixed(2)),
  changedFiles,
  changedLines,
  changedLinesPerMb: Number((changedLines / (bytes / 1e6)).toFixed(2)),
  byKind: Object.fromEntries([...byKind].sort((a, b) => b[1] - a[1])),
};
if (json) console.log(JSON.stringify({ ...summary, samples }, null, 2));
else {
  console.log(
    `${summary.files} files, ${summary.mb} MB in ${summary.seconds} s (${summary.mbPerSecond} MB/s): ${changedLines} lines changed in ${changedFiles} files (${summary.changedLinesPerMb} per MB)`,
  );
  console.log(
    Object.entries(summary.byKind)
      .map(([k, n]) => `  ${k}: ${n}`)
      .join('\n'),
  );
  console.log('sample:');
  for (const s of samples) console.log(`  [${s.kind}] ${s.file}: ${s.line}`);
}
process.exit(0);
