import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { codeTokenText, identifierParts, pathTokenText } from '../src/chunk/tokens.ts';
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
