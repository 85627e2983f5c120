// The repository map's PageRank, computed per name (each use's weight sent to every definer of the name at once),
// against the edge-by-edge definition it replaced; and the reference counts read without JSON.parse.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GENERIC, GROUND } from '../src/context/map-rank.ts';
import { rankDefinitions } from '../src/context/repomap.ts';
import { eachRefCount } from '../src/store/rows.ts';
import type { ReferenceGraph } from '../src/store/types.ts';
import { seededRandom } from './helpers.ts';

/**
 * The map's ranking as defined, one edge per (use, definer): Aider's weights, a use's weight shared among the
 * name's definers, a file's uses passing on its rank against GROUND, the restart at the focused files; code files
 * only, so every role weighs 1. A definition's rank is what its edges bring, less the ×10 of a long compound name.
 */
function byEdges(
  graph: ReferenceGraph,
  focus: string[],
): Map<string, { rank: number; defs: Map<string, number> }> {
  const definers = new Map<string, Set<string>>();
  for (const d of graph.defs) definers.set(d.name, (definers.get(d.name) ?? new Set()).add(d.path));
  const paths = [...new Set([...graph.defs.map((d) => d.path), ...graph.refs.map((r) => r.path)])];
  const id = new Map(paths.map((p, i) => [p, i]));
  const n = paths.length;
  const edges: Array<{ from: number; to: number; w: number; name: string }> = [];
  const out = new Float64Array(n);
  const compound = (name: string) => name.length >= 8 && /[a-z][A-Z]|_[a-z]/.test(name);
  for (const r of graph.refs) {
    const defs = definers.get(r.name);
    if (!defs || defs.size > 50) continue;
    let mul = 1;
    if (compound(r.name)) mul *= 10;
    if (r.name.startsWith('_')) mul *= 0.1;
    if (defs.size > 5) mul *= 0.1;
    if (r.name.length <= 2 || GENERIC.has(r.name.toLowerCase())) mul *= 0.1;
    const targets = [...defs].filter((to) => to !== r.path);
    if (!targets.length) continue;
    const w = mul * Math.sqrt(r.count);
    for (const to of targets)
      edges.push({ from: id.get(r.path)!, to: id.get(to)!, w: w / targets.length, name: r.name });
    out[id.get(r.path)!]! += w;
  }
  const focused = new Set(focus.filter((p) => id.has(p)));
  const personal = new Float64Array(n).fill(focused.size ? 0 : 1 / n);
  for (const p of focused) personal[id.get(p)!] = 1 / focused.size;
  let rank = new Float64Array(n).fill(1 / n);
  for (let it = 0; it < 40; it++) {
    const next = new Float64Array(n);
    let dangling = 0;
    for (let i = 0; i < n; i++) dangling += (rank[i]! * GROUND) / (out[i]! + GROUND);
    for (const e of edges) next[e.to]! += (0.85 * rank[e.from]! * e.w) / (out[e.from]! + GROUND);
    for (let i = 0; i < n; i++) next[i]! += (0.85 * dangling + 0.15) * personal[i]!;
    rank = next;
  }
  const result = new Map<string, { rank: number; defs: Map<string, number> }>();
  for (const d of graph.defs) {
    const entry = result.get(d.path) ?? { rank: rank[id.get(d.path)!]!, defs: new Map<string, number>() };
    entry.defs.set(d.name, 0);
    result.set(d.path, entry);
  }
  for (const e of edges) {
    const defs = result.get(paths[e.to]!)!.defs;
    const brought = (rank[e.from]! * e.w) / (out[e.from]! + GROUND) / (compound(e.name) ? 10 : 1);
    defs.set(e.name, defs.get(e.name)! + brought);
  }
  return result;
}

function randomGraph(seed: number): { graph: ReferenceGraph; focus: string[] } {
  const random = seededRandom(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(random() * xs.length)]!;
  const files = Array.from({ length: 40 + Math.floor(random() * 80) }, (_, i) => `src/m${i}/file${i}.ts`);
  // names of every weight: long compound, private, short, generic, plain; some defined by more than 50 files
  const names = [
    ...Array.from({ length: 30 }, (_, i) => `parseConfig${i}`),
    ...Array.from({ length: 10 }, (_, i) => `_hidden${i}`),
    ...Array.from({ length: 5 }, (_, i) => `x${i}`),
    ...['get', 'run', 'init', 'parse', 'value'],
    ...Array.from({ length: 30 }, (_, i) => `widget${i}`),
  ];
  const defs: ReferenceGraph['defs'] = [];
  for (const name of names) {
    const many = random() < 0.05 ? 60 : 1 + Math.floor(random() * (random() < 0.3 ? 12 : 3));
    for (let k = 0; k < many; k++) {
      const path = pick(files);
      defs.push({ name, path, kind: 'function', line: 1 + Math.floor(random() * 200), container: null });
    }
  }
  const refs: ReferenceGraph['refs'] = [];
  for (const path of files)
    for (const name of new Set(Array.from({ length: Math.floor(random() * 25) }, () => pick(names))))
      refs.push({ name, path, count: 1 + Math.floor(random() * 9) });
  // a file that only uses names (no definitions), and one whose every use is of its own names
  refs.push({ name: 'widget1', path: 'src/only-uses.ts', count: 2 });
  return { graph: { defs, refs }, focus: random() < 0.5 ? [pick(files), pick(files), 'src/nowhere.ts'] : [] };
}

describe('the repository map ranks by names, as by edges', () => {
  it('gives every file and definition the rank the edge-by-edge PageRank gives, on random graphs', () => {
    for (let seed = 1; seed <= 30; seed++) {
      const { graph, focus } = randomGraph(seed);
      const want = byEdges(graph, focus);
      const got = rankDefinitions(graph, focus);
      assert.equal(got.length, want.size, `seed ${seed}`);
      const close = (a: number, b: number, what: string) =>
        assert.ok(
          Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b), 1e-12),
          `${what}: ${a} vs ${b}`,
        );
      for (const e of got) {
        const w = want.get(e.path)!;
        close(e.rank, w.rank, `seed ${seed} ${e.path}`);
        for (const d of e.defs) close(d.rank, w.defs.get(d.name)!, `seed ${seed} ${e.path} ${d.name}`);
      }
      // best first; equal ranks by path
      for (let i = 1; i < got.length; i++)
        assert.ok(
          got[i - 1]!.rank > got[i]!.rank ||
            (got[i - 1]!.rank === got[i]!.rank && got[i - 1]!.path.localeCompare(got[i]!.path) < 0),
          `seed ${seed}: order at ${i}`,
        );
    }
  });

  it('ties a file and its copy, whatever order their sums ran in, and breaks the tie by path', () => {
    // two copies of one file, used alike: their ranks are one number
    const defs: ReferenceGraph['defs'] = [];
    const refs: ReferenceGraph['refs'] = [];
    for (const copy of ['b/lib.ts', 'a/lib.ts'])
      defs.push({ name: 'renderWidget', path: copy, kind: 'function', line: 3, container: null });
    for (let i = 0; i < 7; i++) refs.push({ name: 'renderWidget', path: `src/use${i}.ts`, count: i + 1 });
    const ranked = rankDefinitions({ defs, refs });
    assert.deepEqual(
      ranked.map((e) => e.path),
      ['a/lib.ts', 'b/lib.ts'],
    );
    assert.equal(ranked[0]!.rank, ranked[1]!.rank);
  });
});

describe('reference counts read without JSON.parse', () => {
  it('counts each name of a file the way JSON.parse reads it, escapes and all', () => {
    const random = seededRandom(7);
    const alphabet = ['a', 'Z', '_', '$', 'é', '名', '"', '\\', '9', 'x'];
    for (let t = 0; t < 500; t++) {
      const refs: Record<string, number[]> = {};
      for (let k = Math.floor(random() * 12); k > 0; k--) {
        let name = '';
        for (let c = 1 + Math.floor(random() * 8); c > 0; c--)
          name += alphabet[Math.floor(random() * (random() < 0.9 ? 6 : alphabet.length))];
        refs[name] = Array.from({ length: Math.floor(random() * 6) }, () => Math.floor(random() * 5000));
      }
      const got: Array<[string, number]> = [];
      eachRefCount(JSON.stringify(refs), (name, count) => got.push([name, count]));
      assert.deepEqual(
        got,
        Object.entries(refs).map(([name, lines]) => [name, lines.length]),
      );
    }
  });
});
