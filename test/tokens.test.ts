import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  codeTokenText,
  identifierParts,
  pathTokenText,
  pushCodeTokens,
  pushUnicodeTokens,
} from '../src/chunk/tokens.ts';
import { analyzeQuery } from '../src/search/query.ts';

describe('code-aware tokens', () => {
  it('keeps identifiers whole and splits them at case, underscores and digits', () => {
    assert.equal(codeTokenText('parseConfigFile'), 'parseconfigfile parse config file');
    assert.equal(codeTokenText('HTTPServer'), 'httpserver http server');
    assert.equal(codeTokenText('max_file_bytes'), 'max_file_bytes max file bytes');
    assert.equal(codeTokenText('utf8Decode'), 'utf8decode utf decode');
    assert.equal(codeTokenText('a + b'), '');
    assert.deepEqual(identifierParts('trie-router'), ['trie', 'router']);
  });

  it('scans ASCII by hand into exactly the tokens the regular expressions give', () => {
    const same = (text: string) => {
      const fast: string[] = [];
      const reference: string[] = [];
      pushCodeTokens(text, fast);
      pushUnicodeTokens(text, reference);
      assert.deepEqual(fast, reference, JSON.stringify(text));
      // and the text written byte by byte
      assert.equal(codeTokenText(text), reference.join(' '), JSON.stringify(text));
    };
    // letters, digits, joiners and separators in every order, and characters only Unicode classes know: accented
    // and caseless letters, other scripts' digits, a titlecase letter, a combining mark, a surrogate pair
    const ascii = ['a', 'z', 'A', 'Z', '0', '9', '_', '$', '-', ' ', '.', '\n'];
    const other = ['é', 'É', 'ß', 'Σ', 'σ', '中', '٣', '²', 'Ⅻ', 'ǅ', '\u0301', '😀'];
    let seed = 7;
    const pick = (from: string[]) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return from[(seed >>> 16) % from.length]!; // the high bits: an LCG's low bits repeat quickly
    };
    for (let k = 0; k < 20_000; k++) {
      const from = k % 2 ? ascii : [...ascii, ...other];
      let text = '';
      for (let i = 1 + (k % 13); i > 0; i--) text += pick(from);
      same(text);
    }
    for (const word of [
      'HTTPServer2',
      'getURLsFor',
      '__init__',
      '$scope',
      'a1B2c3',
      'XMLHttpRequest',
      'v8_ABI9x',
    ])
      same(word);
    // and whole source files, and one long enough to outgrow the buffer kept between texts
    const dir = join(import.meta.dirname, '..', 'src', 'chunk');
    for (const name of readdirSync(dir)) same(readFileSync(join(dir, name), 'utf8'));
    const long = 'parseConfigFile HTTPServer2 é '.repeat(100_000);
    const reference: string[] = [];
    pushUnicodeTokens(long, reference);
    assert.equal(codeTokenText(long), reference.join(' '));
    same('getURLsFor'.repeat(3));
  });

  it('tokenises paths into segments, stems and parts', () => {
    assert.equal(pathTokenText('src/trie-router/matchPath.ts'), 'src trie router matchpath match path ts');
  });
});

describe('query analysis', () => {
  it('drops English stopwords but keeps code words', () => {
    const q = analyzeQuery('how is the parseConfig function called?');
    assert.deepEqual(q.terms, ['parseconfig', 'parse', 'config', 'function', 'called']);
  });

  it('finds file names, path fragments and kebab-case stems', () => {
    const q = analyzeQuery('bug in registry.py when src/server routes through trie-router');
    assert.ok(q.fileNames.query.basenames.includes('registry.py'));
    assert.ok(q.fileNames.query.fragments.includes('src/server'));
    assert.ok(q.fileNames.query.stems.includes('trie-router'));
    assert.equal(q.fileNames.strength.get('registry.py'), 1);
  });

  it('rates identifiers that look like code above plain words', () => {
    const q = analyzeQuery('why does `load` call parseConfig and not reader');
    assert.equal(q.identifiers.get('load'), 1);
    assert.equal(q.identifiers.get('parseconfig'), 0.8);
    assert.ok((q.identifiers.get('reader') ?? 0) < 0.5);
  });
});
