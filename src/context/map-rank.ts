/**
 * The repository map's ranking: PageRank over the files, along the uses of names (Aider's repository map),
 * personalised toward a question's words and the files already in the context; and the build-tag and platform twins
 * (files of one folder that define the same names) that the map shows as one entry.
 */
import type { CompactGraph } from '../store/types.ts';
import { type FileRole, fileRole } from '../workspace/roles.ts';

const DAMPING = 0.85;
/**
 * What a file's uses weigh together before they pass its whole rank on (a use of a plain name weighs 1): a file that
 * uses one generic name (`File`, weight 0.1) passes a twentieth of its rank to the file that defines it, and the rest
 * to the restart, instead of all of it. Without it a small file that calls `xml.NewDecoder` once made gin's JSON codec
 * look central.
 */
export const GROUND = 2;
/**
 * What the question's words do to the final order: a file's rank times 1 + MATCH_BOOST × (how much the file is about
 * the question, against the file most about it). Measured on bench/questions (map-bench.ts, docs/context.md): the
 * restart at the question's files alone left the hubs (gRPC's `codes.go`, SQLAlchemy's `elements.py`) above them.
 */
const MATCH_BOOST = 30;
/** What a word that a file's definitions spell counts, against one its path holds. */
const NAME_WORD = 2;
const ITERATIONS = 40;
const MAX_DEFINERS = 50;
/**
 * How much a file counts in the map by what it is for: a map shows where the code lives, so tests, examples, docs
 * and data are kept (a question may be about them) but rank below the code they exercise. Their uses of the code's
 * names still count, at a third: a large test suite otherwise decides which code looks central.
 */
const MAP_ROLE: Record<FileRole | 'aside', number> = {
  code: 1,
  test: 0.15,
  docs: 0.2,
  data: 0.2,
  aside: 0.2,
};
const FROM_ROLE: Record<FileRole | 'aside', number> = {
  code: 1,
  test: 0.33,
  docs: 0.33,
  data: 0.33,
  aside: 0.33,
};
/**
 * Names too generic to say which definition a use means (on top of Aider's "defined in more than 5 files"): verbs
 * every codebase defines, and the names of the standard libraries' own types and methods, which a file uses far more
 * often than the repository's definition of them (gin's `File`, `String`, `Value` and its JSON codec's `Marshal`,
 * `NewDecoder`: most uses are `os.File`, `fmt` strings, `xml.NewDecoder`).
 */
export const GENERIC = new Set(
  `get set run init main new create update delete remove add handle handler call apply process start stop open close
read write load save parse render build make value data name key type id item items list map options config index
test setup default self this window document global globalthis console require module exports string error errors
file files len size count next reset format print println printf sprintf errorf fatal fatalf info debug warn log
equal equals hash hashcode tostring to_string clone copy flush sync lock unlock wait done err header body status
marshal unmarshal marshalindent encode decode newencoder newdecoder encoder decoder reader writer from into fmt eq
cmp drop iter deref as_ref is_empty contains append push pop insert clear keys size`.split(/\s+/),
);
/** Examples, demos, benchmarks and fixtures (vite's playground/), and generated code (protobuf, gRPC stubs). */
const EXAMPLE_DIR = /(^|\/)(examples?|samples?|demos?|playground|benchmarks?|bench)\//i;
const GENERATED =
  /(\.pb\.go|_pb2(_grpc)?\.py|\.pb\.(cc|h)|_grpc\.pb\.go|\.generated\.[a-z]+|\.g\.dart|_gen\.go)$/i;

/** What a file is for, as the map sees it: the search's roles, with examples and generated code set apart. */
function mapRole(path: string): FileRole | 'aside' {
  if (EXAMPLE_DIR.test(path) || GENERATED.test(path)) return 'aside';
  return fileRole(path);
}

/**
 * Words of a question that say nothing about the code (English glue and the words every question about code
 * uses): they neither lean the ranking nor make a name "mentioned".
 */
const STOP = new Set(
  `the and for with that this these those from into onto are was were been being has have had its can could should
would will not but any all each there their them they then than about after before between over under some such
only also same other more most very just way ways how what when where which who whom whose why does did doing done
happen happens happened work works working get gets got use uses used using make makes made new one two via per
where whether while until within without instead else again still even much many own let lets need needs our your
code file files function functions method methods class classes call calls called value values thing things part
parts kind kinds case cases time times first last next see`.split(/\s+/),
);

/** A word's stem, crudely: `routes`, `routed`, `routing` → `rout`; `matches`, `matched` → `match`. */
export function stem(word: string): string {
  const w = word.toLowerCase();
  for (const [suffix, put] of [
    ['ies', 'y'],
    ['ing', ''],
    ['ed', ''],
    ['es', ''],
    ['er', ''],
    ['s', ''],
  ] as const)
    if (w.endsWith(suffix) && w.length - suffix.length >= 3 && !(suffix === 's' && w.endsWith('ss')))
      return trimE(w.slice(0, w.length - suffix.length) + put);
  return trimE(w);
}
const trimE = (w: string) => (w.length > 3 && w.endsWith('e') ? w.slice(0, -1) : w);

/** The words of an identifier or a path, lower-cased: `parseHTTPRequest` → parse, http, request. */
export function wordsOf(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((p) => p.length >= 3 && !/^\d/.test(p));
}

/** What the ranking derives from a graph once (the stores keep one graph object until the index changes). */
interface Shape {
  roles: Array<FileRole | 'aside'>;
  /** Each name's definers, once each (a file may define a name twice: a class and its constructor), flattened. */
  slotStart: Int32Array;
  slotFile: Int32Array;
  /** Aider's weight of a name, question aside (0: it links nothing, defined by none or too many files). */
  nameMul: Float64Array;
  /** 1 for a long compound name (`parseConfig`, `parse_config`), which Aider weighs ×10. */
  compound: Uint8Array;
  /** stem → the files whose path holds it, and the names one of whose words it is (built on the first question). */
  words?: { paths: Map<string, number[]>; names: Map<string, number[]> };
}
const shapes = new WeakMap<CompactGraph, Shape>();

function shapeOf(g: CompactGraph): Shape {
  const known = shapes.get(g);
  if (known) return known;
  const nameCount = g.names.length;
  const definerSets: Array<Set<number>> = Array.from({ length: nameCount }, () => new Set());
  for (let i = 0; i < g.defFile.length; i++) definerSets[g.defName[i]!]!.add(g.defFile[i]!);
  const slotStart = new Int32Array(nameCount + 1);
  for (let k = 0; k < nameCount; k++) slotStart[k + 1] = slotStart[k]! + definerSets[k]!.size;
  const slotFile = new Int32Array(slotStart[nameCount]!);
  const nameMul = new Float64Array(nameCount);
  const compound = new Uint8Array(nameCount);
  for (let k = 0; k < nameCount; k++) {
    slotFile.set([...definerSets[k]!], slotStart[k]!);
    const name = g.names[k]!;
    const definers = definerSets[k]!.size;
    if (!definers || definers > MAX_DEFINERS) continue;
    let mul = 1;
    if (name.length >= 8 && /[a-z][A-Z]|_[a-z]/.test(name)) {
      mul *= 10;
      compound[k] = 1;
    }
    if (name.startsWith('_')) mul *= 0.1;
    if (definers > 5) mul *= 0.1;
    if (name.length <= 2 || GENERIC.has(name.toLowerCase())) mul *= 0.1;
    nameMul[k] = mul;
  }
  const shape = { roles: g.paths.map(mapRole), slotStart, slotFile, nameMul, compound };
  shapes.set(g, shape);
  return shape;
}

function wordIndex(g: CompactGraph, shape: Shape): NonNullable<Shape['words']> {
  if (shape.words) return shape.words;
  const add = (m: Map<string, number[]>, word: string, id: number) => {
    const s = stem(word);
    const list = m.get(s);
    if (!list) m.set(s, [id]);
    else if (list[list.length - 1] !== id) list.push(id);
  };
  const paths = new Map<string, number[]>();
  g.paths.forEach((p, i) => {
    for (const w of new Set(wordsOf(p.replace(/\.[a-z0-9]+$/i, '')))) add(paths, w, i);
  });
  const names = new Map<string, number[]>();
  g.names.forEach((name, k) => {
    for (const w of new Set(wordsOf(name))) add(names, w, k);
  });
  shape.words = { paths, names };
  return shape.words;
}

export interface RankOptions {
  /** Files already in the context: the random surfer restarts at them too. */
  focus?: string[];
  /** Words of the question (`questionMentions`). */
  mentions?: string[];
}

/**
 * Each file's rank (weighed by what the file is for), and what a file's definition of a name receives. A group of
 * twins is ranked as one file, its leader (`twinLeaders`): the others rank 0.
 */
export interface Ranked {
  fileRank: Float64Array;
  defRank(file: number, name: number): number;
  /** Each file's twin leader (itself for the leader), -1 for a file with no twin. */
  leader: Int32Array;
}

/**
 * How much each file is about the question: each of its words (stop words aside, compared by stem) that a file's
 * path holds counts its inverse document frequency (over the files that hold it in their path or their names), one
 * that a file's definitions spell (a word of `addRoute` for "routes") twice that, and a little more for each further
 * definition that spells it, and a name the question spells whole (`acquireWriter`, `parse_config`) three times
 * that. Also the names the question spells whole or in part, with how many of its words each holds. A twin's path
 * counts for its leader.
 */
function questionMatch(
  g: CompactGraph,
  shape: Shape,
  mentions: string[],
  leader: Int32Array,
): { files: Float64Array; names: Map<number, number>; spelled: Set<number> } {
  const n = g.paths.length;
  const files = new Float64Array(n);
  const names = new Map<number, number>();
  const spelled = new Set<number>();
  const words = [...new Set(mentions.map((m) => m.toLowerCase()).filter((m) => !STOP.has(m)))];
  if (!words.length) return { files, names, spelled };
  const index = wordIndex(g, shape);
  const whole = new Set(words);
  g.names.forEach((name, k) => {
    if (whole.has(name.toLowerCase())) spelled.add(k);
  });
  const definedBy = (k: number) => shape.slotFile.subarray(shape.slotStart[k]!, shape.slotStart[k + 1]!);
  const stems = new Set(
    mentions
      .filter((m) => !STOP.has(m.toLowerCase()))
      .flatMap((m) => wordsOf(m).filter((w) => !STOP.has(w)))
      .map(stem),
  );
  for (const s of stems) {
    const byPath = [...new Set((index.paths.get(s) ?? []).map((f) => (leader[f]! >= 0 ? leader[f]! : f)))];
    const byName = new Map<number, number>(); // file → how many of its names hold the word
    for (const k of index.names.get(s) ?? []) {
      names.set(k, (names.get(k) ?? 0) + 1);
      for (const f of definedBy(k)) byName.set(f, (byName.get(f) ?? 0) + 1);
    }
    const df = new Set([...byPath, ...byName.keys()]).size;
    if (!df) continue;
    const idf = Math.log(1 + n / df);
    for (const f of byPath) files[f]! += idf;
    for (const [f, count] of byName) files[f]! += idf * NAME_WORD * (1 + Math.log(count) / 4);
  }
  for (const k of spelled) {
    const definers = definedBy(k);
    const idf = Math.log(1 + n / Math.max(1, definers.length));
    for (const f of definers) files[f]! += 3 * idf;
  }
  return { files, names, spelled };
}

/**
 * Where the random surfer restarts: the files already in the context (half the mass when there are both) and the
 * files about the question, in proportion to the square of how much they are about it; with neither, any file,
 * leaning toward code.
 */
function restartVector(
  g: CompactGraph,
  shape: Shape,
  focus: string[],
  match: Float64Array,
  leader: Int32Array,
): Float64Array {
  const n = g.paths.length;
  const personal = new Float64Array(n);
  const ids = new Map(g.paths.map((p, i) => [p, i]));
  const focused = new Set(
    focus.flatMap((p) =>
      ids.has(p) ? [leader[ids.get(p)!]! >= 0 ? leader[ids.get(p)!]! : ids.get(p)!] : [],
    ),
  );
  let matched = 0;
  for (let i = 0; i < n; i++) matched += match[i]! ** 2;
  const toFocus = focused.size ? (matched ? 0.5 : 1) : 0;
  for (const i of focused) personal[i]! += toFocus / focused.size;
  if (matched) for (let i = 0; i < n; i++) personal[i]! += ((1 - toFocus) * match[i]! ** 2) / matched;
  if (focused.size || matched) return personal;
  let total = 0;
  for (let i = 0; i < n; i++)
    total += personal[i] = leader[i]! >= 0 && leader[i] !== i ? 0 : MAP_ROLE[shape.roles[i]!];
  for (let i = 0; i < n; i++) personal[i]! /= total;
  return personal;
}

/**
 * PageRank over the graph whose edges run from a file that uses a name to the files that define it (Aider's
 * repository map). Edge weights follow Aider: √(uses), ×10 for long compound names and for names the question
 * spells, ×0.1 for private, short and generic names and for names defined in more than 5 files; and a use's weight
 * is shared among the name's definers, so that a name defined in four files (build-tag twins, unrelated methods
 * called `String`) sends what a name defined once does, not four times that.
 *
 * The edges are never listed one by one: a use of a name sends the same weight to each of the name's definers (all
 * but the using file itself), so each iteration sums what every use of a name sends (`sent`, one pass over the uses)
 * and hands each definer that sum, less its own use. The work is the uses plus the definitions, not their product:
 * 1.7 million uses of names defined in up to 50 files each took 35 s and 1.6 GB as edge objects at 100,000 files.
 */
export function rankGraph(original: CompactGraph, options: RankOptions = {}): Ranked {
  const { graph: g, leader } = mergeTwins(original);
  const shape = shapeOf(g);
  const { roles, slotStart, slotFile } = shape;
  const n = g.paths.length;
  const nameCount = g.names.length;
  const match = questionMatch(g, shape, options.mentions ?? [], leader);
  const nameMul = Float64Array.from(shape.nameMul);
  for (const k of match.spelled) nameMul[k]! *= 10;
  const slotOwn = new Int32Array(slotFile.length).fill(-1);
  const slotOf = (file: number, k: number) => {
    for (let slot = slotStart[k]!; slot < slotStart[k + 1]!; slot++) if (slotFile[slot] === file) return slot;
    return -1;
  };

  // the uses that carry rank: from a file, of a name, with a weight shared by every definer of the name but the file
  const uses: number[] = [];
  const outWeight = new Float64Array(n);
  const share = new Float64Array(g.useFile.length);
  for (let i = 0; i < g.useFile.length; i++) {
    const k = g.useName[i]!;
    if (!nameMul[k]) continue;
    const from = g.useFile[i]!;
    const own = slotOf(from, k);
    const targets = slotStart[k + 1]! - slotStart[k]! - (own >= 0 ? 1 : 0);
    if (!targets) continue;
    const w = FROM_ROLE[roles[from]!] * nameMul[k]! * Math.sqrt(g.useCount[i]!);
    if (own >= 0) slotOwn[own] = i;
    uses.push(i);
    share[i] = w / targets;
    outWeight[from]! += w;
  }
  // what one unit of a file's rank sends to each definer along each of its uses
  for (const i of uses) share[i]! /= outWeight[g.useFile[i]!]! + GROUND;
  const personal = restartVector(g, shape, options.focus ?? [], match.files, leader);

  /** What each name's uses send each definer, given the files' ranks, into `sentBy` (per use) and `sent` (per name). */
  const sentBy = new Float64Array(g.useFile.length);
  const sent = new Float64Array(nameCount);
  const send = (rank: Float64Array) => {
    sent.fill(0);
    for (const i of uses) {
      const v = rank[g.useFile[i]!]! * share[i]!;
      sentBy[i] = v;
      sent[g.useName[i]!]! += v;
    }
  };
  /** What the definer in `slot` receives: every use of the name but its own. */
  const received = (slot: number, k: number) => {
    const own = slotOwn[slot]!;
    return own < 0 ? sent[k]! : Math.max(0, sent[k]! - sentBy[own]!);
  };

  let rank = new Float64Array(n).fill(1 / n);
  for (let it = 0; it < ITERATIONS; it++) {
    const next = new Float64Array(n);
    let dangling = 0;
    // what a file does not pass on (all of it for a file that uses nothing) restarts
    for (let i = 0; i < n; i++) dangling += (rank[i]! * GROUND) / (outWeight[i]! + GROUND);
    send(rank);
    for (let k = 0; k < nameCount; k++)
      if (nameMul[k])
        for (let slot = slotStart[k]!; slot < slotStart[k + 1]!; slot++)
          next[slotFile[slot]!]! += DAMPING * received(slot, k);
    for (let i = 0; i < n; i++) next[i]! += (DAMPING * dangling + (1 - DAMPING)) * personal[i]!;
    rank = next;
  }

  // a file's rank flows to the definitions it uses, in proportion to the edge weights
  send(rank);
  const fileRank = new Float64Array(n);
  let top = 0;
  for (let i = 0; i < n; i++) top = Math.max(top, match.files[i]!);
  for (let i = 0; i < n; i++)
    fileRank[i] = sure(
      rank[i]! * MAP_ROLE[roles[i]!] * (top ? 1 + (MATCH_BOOST * match.files[i]!) / top : 1),
    );
  return {
    fileRank,
    leader,
    defRank: (file, k) => {
      const slot = nameMul[k] ? slotOf(file, k) : -1;
      // what the definition receives, less Aider's ×10 for a long compound name: that weighs which uses link files,
      // but a file's definitions are listed by how much they are used (`Context` before `IndentedJSON`); one that
      // the question names (a word of it) leads its file's list, used or not
      if (slot < 0) return 0;
      const words = match.names.get(k) ?? 0;
      const used = received(slot, k) / (shape.compound[k] ? 10 : 1);
      return sure((used + (words ? 0.01 / n : 0)) * (1 + 2 * words));
    },
  };
}

/**
 * A rank to 12 significant digits: ranks equal but for the last digits of a float sum (a file and its copy, summed
 * in another order) are a tie, broken by line or path, whatever order the sums ran in.
 */
export function sure(x: number): number {
  return x === 0 ? 0 : Number(x.toPrecision(12));
}

/** The graph with each group of twins made one file, its leader (the others keep their paths, and nothing else). */
const mergedGraphs = new WeakMap<CompactGraph, { graph: CompactGraph; leader: Int32Array }>();

function mergeTwins(g: CompactGraph): { graph: CompactGraph; leader: Int32Array } {
  const known = mergedGraphs.get(g);
  if (known) return known;
  const leader = twinLeaders(g, new Set(g.defFile));
  const to = (f: number) => (leader[f]! >= 0 ? leader[f]! : f);
  const merged = leader.some((l) => l >= 0)
    ? { graph: { ...g, defFile: g.defFile.map(to), useFile: g.useFile.map(to) }, leader }
    : { graph: g, leader };
  mergedGraphs.set(g, merged);
  return merged;
}

/** Names that may be the whole of a platform twin's definitions (`foo_linux.go: func openFile`): not these. */
const LONE_NAME = /^(main|init|new|setup|teardown|default|test\w*|__\w+__)$/i;

/**
 * Build-tag and platform twins: files of one folder, with one extension, that define the same names (3 or more, or
 * fewer when the file names start alike: `foo_linux.go` and `foo_windows.go`, not two handlers that each define
 * `register_hooks`), or nearly: three quarters of either file's names shared, and at least 5
 * (`codec/json/{go_json,json,jsoniter,sonic}.go`, each with its own struct for the same 6 methods) or 3 when the
 * file names start alike (`binding.go` and `binding_nomsgpack.go`). Two implementations of a small interface
 * (`bson.go` and `protobuf.go`: a struct, `Name`, `Bind`, `BindBody`) are not twins. Returns each file's group leader
 * (the shortest name, then the first by path), -1 for a file with no twin. Among `files` only.
 */
function twinLeaders(g: CompactGraph, files: Iterable<number>): Int32Array {
  const leader = new Int32Array(g.paths.length).fill(-1);
  const wanted = new Set(files);
  const namesOf = new Map<number, Set<number>>();
  for (let i = 0; i < g.defFile.length; i++) {
    const f = g.defFile[i]!;
    if (!wanted.has(f)) continue;
    const set = namesOf.get(f);
    if (set) set.add(g.defName[i]!);
    else namesOf.set(f, new Set([g.defName[i]!]));
  }
  // files by folder and extension, then pairs within a folder (a folder's files with names are few)
  const folders = new Map<string, number[]>();
  for (const f of namesOf.keys()) {
    const path = g.paths[f]!;
    const slash = path.lastIndexOf('/');
    const ext = /\.[^./]+$/.exec(path)?.[0] ?? '';
    const key = `${path.slice(0, slash + 1)}\0${ext}`;
    const list = folders.get(key);
    if (list) list.push(f);
    else folders.set(key, [f]);
  }
  const parent = new Map<number, number>();
  const root = (f: number): number => {
    let r = f;
    while (parent.has(r)) r = parent.get(r)!;
    return r;
  };
  for (const group of folders.values()) {
    if (group.length < 2 || group.length > 400) continue;
    for (let a = 0; a < group.length; a++)
      for (let b = a + 1; b < group.length; b++)
        if (twins(g, group[a]!, group[b]!, namesOf)) {
          const [ra, rb] = [root(group[a]!), root(group[b]!)];
          if (ra !== rb) parent.set(rb, ra);
        }
  }
  const members = new Map<number, number[]>();
  for (const f of parent.keys()) {
    const r = root(f);
    const list = members.get(r);
    if (list) list.push(f);
    else members.set(r, [r, f]);
  }
  for (const group of members.values()) {
    const base = (f: number) => g.paths[f]!.slice(g.paths[f]!.lastIndexOf('/') + 1);
    const first = group.reduce((a, b) =>
      base(b).length < base(a).length || (base(b).length === base(a).length && g.paths[b]! < g.paths[a]!)
        ? b
        : a,
    );
    for (const f of group) leader[f] = first;
  }
  return leader;
}

function twins(g: CompactGraph, a: number, b: number, namesOf: Map<number, Set<number>>): boolean {
  const [as, bs] = [namesOf.get(a)!, namesOf.get(b)!];
  let shared = 0;
  for (const k of as) if (bs.has(k)) shared++;
  const stem = (f: number) =>
    /^[^/]*?(?=[-_.]|$)/.exec(g.paths[f]!.slice(g.paths[f]!.lastIndexOf('/') + 1))![0];
  if (shared === as.size && shared === bs.size)
    return (
      as.size >= 3 ||
      (stem(a) === stem(b) && [...as].every((k) => g.names[k]!.length >= 4 && !LONE_NAME.test(g.names[k]!)))
    );
  return shared >= 3 && shared >= 0.75 * Math.max(as.size, bs.size) && (shared >= 5 || stem(a) === stem(b));
}
