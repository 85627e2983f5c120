// A text's trigrams as words (store/trigram-terms.ts): what SQLite's trigram table holds and a grep's literals are
// looked up by. A literal found in a text, in any case, must have every one of its words among the text's.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import RE2 from 're2';
import { DEFAULT_CONFIG } from '../src/config/config.ts';
import { processFile } from '../src/indexing/process-file.ts';
import { foldCase, literalTerms, trigramTerms } from '../src/store/trigram-terms.ts';
import { makeTree, removeTree } from './helpers.ts';

const dirs: string[] = [];
after(() => dirs.forEach(removeTree));

/** A seeded generator, so that a failure can be replayed. */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

// ASCII letters, digits, punctuation and white space; control characters; Greek with both sigmas; a dotted capital I
// (two units lower-cased); accented letters; CJK; astral letters and an emoji (surrogate pairs); a lone surrogate; and
// every letter that lower case leaves apart from one a case-insensitive match equates it with (the micro sign, the
// long s, the Kelvin sign, Greek symbol forms, Cyrillic narrow forms, a ligature)
const PIECES = [
  ...'abcsXYZSk019_-.()"\' \t\n\r{}$'.split(''),
  '\u0000',
  '\u0007',
  '\u007f',
  ...'ΟΔΥΣσςαΑμΜβΒιΙθφπκρεвдостъѣꙋṡΐΰﬆ'.split(''),
  ...'µſ\u0345\u1fbeϐϑϕϖϰϱϵ\u1c80\u1c81\u1c82\u1c83\u1c84\u1c85\u1c86\u1c87\u1c88ẛ\u1fd3\u1fe3ﬅKÅ'.split(''),
  'İ',
  'ı',
  'Ü',
  'ß',
  'é',
  'É',
  '漢',
  '字',
  '𝒳',
  '𝒴',
  '🚀',
  '\ud800',
];

function randomText(next: () => number, length: number): string {
  let s = '';
  while (s.length < length) s += PIECES[Math.floor(next() * PIECES.length)];
  return s;
}

const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Each piece's case group as RE2 sees it: the pieces and their upper and lower cases that `(?i)` matches it with. */
const GROUPS = (() => {
  const letters = [...new Set(PIECES.flatMap((p) => [p, p.toUpperCase(), p.toLowerCase()]))].filter(
    (p) => Array.from(p).length === 1 && !LONE.test(p),
  );
  return new Map(
    letters.map((p) => {
      const re = new RE2(`^${escapeRegex(p)}$`, 'iu');
      return [p, letters.filter((q) => re.test(q))];
    }),
  );
})();

/** A string with each character swapped for a random member of its case group: what a grep without case meets. */
function recase(next: () => number, s: string): string {
  return Array.from(s)
    .map((c) => {
      const group = GROUPS.get(c) ?? [c];
      return group[Math.floor(next() * group.length)]!;
    })
    .join('');
}

describe('trigram terms', () => {
  it('gives every literal of a text, in any case, only words the text has', () => {
    const next = random(7);
    for (let round = 0; round < 3000; round++) {
      const text = randomText(next, 3 + Math.floor(next() * 80));
      const words = new Set(trigramTerms(text).split(' '));
      const start = Math.floor(next() * (text.length - 3));
      const literal = text.slice(start, start + 3 + Math.floor(next() * 12));
      for (const variant of [literal, recase(next, literal)]) {
        // RE2 finds it without regard to case (the swap kept to each letter's case group); a literal cut through a
        // surrogate pair is none RE2 reads, and still must find its text
        if (!LONE.test(variant) && !LONE.test(text))
          assert.ok(new RE2(escapeRegex(variant), 'iu').test(text), JSON.stringify([variant, text]));
        for (const w of literalTerms(variant))
          assert.ok(words.has(w), `${JSON.stringify(variant)} in ${JSON.stringify(text)}: ${w} missing`);
      }
    }
  });

  it('is one word per distinct trigram of the lower-cased text, each word one trigram', () => {
    const next = random(11);
    for (let round = 0; round < 1000; round++) {
      const text = randomText(next, Math.floor(next() * 60));
      const lower = foldCase(text);
      const grams = new Set<string>();
      for (let i = 0; i + 3 <= lower.length; i++) grams.add(lower.slice(i, i + 3));
      const terms = trigramTerms(text);
      const words = terms ? terms.split(' ') : [];
      assert.equal(words.length, grams.size, JSON.stringify(text));
      assert.equal(new Set(words).size, words.length, 'no word twice');
      for (const w of words) assert.match(w, /^(?:[0-9a-z]{4}|z[0-9a-z]{12})$/);
      // distinct trigrams are distinct words: the words of each trigram alone are the text's words, one each
      assert.deepEqual(new Set([...grams].flatMap(literalTerms)), new Set(words));
    }
  });

  it('folds every letter of the Basic Multilingual Plane as its upper case, where RE2 equates the two', () => {
    let checked = 0;
    for (let c = 0; c < 0x10000; c++) {
      if (c >= 0xd800 && c < 0xe000) continue;
      const letter = String.fromCharCode(c);
      const upper = letter.toUpperCase();
      if (upper.length !== 1 || upper === letter) continue;
      if (!new RE2(`^${escapeRegex(letter)}$`, 'iu').test(upper)) continue;
      checked++;
      assert.equal(
        foldCase(letter),
        foldCase(upper),
        `U+${c.toString(16)} and its upper case U+${upper.charCodeAt(0).toString(16)}`,
      );
    }
    assert.ok(checked > 1000, `${checked} letters checked`);
  });

  it('keeps texts apart that share no trigram, whatever their case', () => {
    assert.deepEqual(literalTerms('ab'), []);
    assert.deepEqual(literalTerms('HeLLo'), literalTerms('hello'));
    assert.notDeepEqual(literalTerms('hel'), literalTerms('hem'));
    // the final sigma: a word's last Σ lower-cases to ς, the same letter in the middle of a literal to σ
    assert.deepEqual(literalTerms('ΟΔΥΣ'), literalTerms('οδυσ'));
    const words = new Set(trigramTerms('ΟΔΥΣΣΕΥΣ').split(' '));
    for (const w of literalTerms('δυσ')) assert.ok(words.has(w));
    // letters lower case leaves apart, as RE2 equates them without regard to case
    assert.deepEqual(literalTerms('ſtatic'), literalTerms('static'));
    assert.deepEqual(literalTerms('10µs'), literalTerms('10μs'));
    assert.deepEqual(literalTerms('ϐeta'), literalTerms('βeta'));
    // what a long text repeats is written once
    assert.equal(trigramTerms('abcabcabcabc'.repeat(1000)).split(' ').length, 3);
  });

  it("is what a parse worker sends a store that keeps no text, in the text's place", async () => {
    const text = 'def hello():\n    return "Hello, wörld 🚀"\n';
    const root = makeTree({ 'a.py': text });
    dirs.push(root);
    const task = { path: 'a.py', size: Buffer.byteLength(text), mtimeMs: 1, keepText: true };
    const asText = await processFile(root, task, DEFAULT_CONFIG);
    const asTerms = await processFile(root, { ...task, trigramsOnly: true }, DEFAULT_CONFIG);
    assert.equal(asText.status, 'indexed');
    assert.equal(asTerms.status, 'indexed');
    if (asText.status !== 'indexed' || asTerms.status !== 'indexed') return;
    assert.equal(asText.update.text, text);
    assert.equal(asTerms.update.text, undefined);
    assert.equal(asTerms.update.trigrams, trigramTerms(text));
    // an unchanged file asked for its text again gives the terms too
    const hash = asText.update.file.hash;
    const refill = await processFile(
      root,
      { ...task, trigramsOnly: true, knownHash: hash, refillText: true },
      DEFAULT_CONFIG,
    );
    assert.deepEqual(refill, {
      status: 'unchanged',
      path: 'a.py',
      size: task.size,
      mtimeMs: 1,
      trigrams: trigramTerms(text),
    });
  });
});
