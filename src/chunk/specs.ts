/**
 * What counts as a definition in each grammar: tree-sitter node types mapped to a symbol kind. Types that a
 * grammar version does not know are dropped when the query is compiled, so a grammar update cannot break indexing.
 */
export type SymbolKind =
  | 'function'
  | 'method'
  | 'class'
  | 'interface'
  | 'struct'
  | 'enum'
  | 'trait'
  | 'impl'
  | 'module'
  | 'type'
  | 'constant'
  | 'variable'
  | 'macro'
  | 'object';

export interface GrammarSpec {
  defs: Record<string, SymbolKind>;
  /** Extra query patterns; each must capture the definition node as @def (kind taken from `defs` or 'function'). */
  extraPatterns?: string[];
  /** Node types that, inside a class-like definition, turn a function into a method. */
  methodContainers?: string[];
}

const JS_DEFS: Record<string, SymbolKind> = {
  function_declaration: 'function',
  generator_function_declaration: 'function',
  class_declaration: 'class',
  abstract_class_declaration: 'class',
  method_definition: 'method',
  interface_declaration: 'interface',
  type_alias_declaration: 'type',
  enum_declaration: 'enum',
  internal_module: 'module',
  module: 'module',
};
// Separate patterns, not an alternation: web-tree-sitter 0.25.10 ignores an alternation under a field.
// Functions bound to names, and class fields holding functions (`fetch = (request) => …`: methods in TypeScript
// frameworks; `public_field_definition` in TypeScript, `field_definition` in JavaScript).
const JS_EXTRA = [
  ...['lexical_declaration', 'variable_declaration'].flatMap((decl) =>
    ['arrow_function', 'function_expression'].map(
      (fn) => `(${decl} (variable_declarator value: (${fn}))) @def`,
    ),
  ),
  ...['public_field_definition', 'field_definition'].flatMap((field) =>
    ['arrow_function', 'function_expression'].map((fn) => `(${field} value: (${fn})) @def`),
  ),
  // methods assigned to a prototype: `Reply.prototype.send = function (payload) { … }`
  ...['arrow_function', 'function_expression'].map(
    (fn) =>
      `(expression_statement (assignment_expression left: (member_expression object: (member_expression property: (property_identifier) @_proto (#eq? @_proto "prototype"))) right: (${fn}))) @def`,
  ),
];

export const GRAMMAR_SPECS: Record<string, GrammarSpec> = {
  typescript: { defs: JS_DEFS, extraPatterns: JS_EXTRA },
  tsx: { defs: JS_DEFS, extraPatterns: JS_EXTRA },
  javascript: { defs: JS_DEFS, extraPatterns: JS_EXTRA },
  python: {
    defs: { function_definition: 'function', class_definition: 'class' },
    // functions bound to names: `double = lambda x: x * 2`
    extraPatterns: ['(expression_statement (assignment left: (identifier) right: (lambda))) @def'],
    methodContainers: ['class_definition'],
  },
  go: {
    defs: { function_declaration: 'function', method_declaration: 'method', type_declaration: 'type' },
    // functions bound to names: `var defaultLogFormatter = func(param LogFormatterParams) string {…}`
    extraPatterns: ['(var_declaration (var_spec value: (expression_list (func_literal)))) @def'],
  },
  rust: {
    defs: {
      function_item: 'function',
      function_signature_item: 'function',
      impl_item: 'impl',
      struct_item: 'struct',
      enum_item: 'enum',
      union_item: 'struct',
      trait_item: 'trait',
      mod_item: 'module',
      macro_definition: 'macro',
      type_item: 'type',
      const_item: 'constant',
      static_item: 'constant',
    },
    methodContainers: ['impl_item', 'trait_item'],
  },
  java: {
    defs: {
      class_declaration: 'class',
      interface_declaration: 'interface',
      enum_declaration: 'enum',
      record_declaration: 'class',
      annotation_type_declaration: 'interface',
      method_declaration: 'method',
      constructor_declaration: 'method',
    },
  },
  c: {
    defs: {
      function_definition: 'function',
      struct_specifier: 'struct',
      union_specifier: 'struct',
      enum_specifier: 'enum',
      type_definition: 'type',
      preproc_function_def: 'macro',
    },
  },
  cpp: {
    defs: {
      function_definition: 'function',
      class_specifier: 'class',
      struct_specifier: 'struct',
      union_specifier: 'struct',
      enum_specifier: 'enum',
      namespace_definition: 'module',
      type_definition: 'type',
      alias_declaration: 'type',
      preproc_function_def: 'macro',
    },
    methodContainers: ['class_specifier', 'struct_specifier'],
  },
  c_sharp: {
    defs: {
      class_declaration: 'class',
      interface_declaration: 'interface',
      struct_declaration: 'struct',
      enum_declaration: 'enum',
      record_declaration: 'class',
      namespace_declaration: 'module',
      file_scoped_namespace_declaration: 'module',
      method_declaration: 'method',
      constructor_declaration: 'method',
      property_declaration: 'method',
      delegate_declaration: 'type',
    },
  },
  ruby: {
    defs: { method: 'method', singleton_method: 'method', class: 'class', module: 'module' },
  },
  php: {
    defs: {
      function_definition: 'function',
      method_declaration: 'method',
      class_declaration: 'class',
      interface_declaration: 'interface',
      trait_declaration: 'trait',
      enum_declaration: 'enum',
      namespace_definition: 'module',
    },
  },
  kotlin: {
    defs: {
      function_declaration: 'function',
      class_declaration: 'class',
      object_declaration: 'object',
      companion_object: 'object',
      type_alias: 'type',
    },
    methodContainers: ['class_declaration', 'object_declaration', 'companion_object'],
  },
  swift: {
    defs: {
      function_declaration: 'function',
      class_declaration: 'class',
      protocol_declaration: 'interface',
      init_declaration: 'method',
      typealias_declaration: 'type',
    },
    methodContainers: ['class_declaration', 'protocol_declaration'],
  },
  scala: {
    defs: {
      function_definition: 'function',
      class_definition: 'class',
      object_definition: 'object',
      trait_definition: 'trait',
      type_definition: 'type',
    },
    methodContainers: ['class_definition', 'object_definition', 'trait_definition'],
  },
  bash: { defs: { function_definition: 'function' } },
  lua: {
    defs: { function_declaration: 'function', function_definition_statement: 'function' },
  },
  dart: {
    defs: {
      class_definition: 'class',
      function_signature: 'function',
      method_signature: 'method',
      enum_declaration: 'enum',
      mixin_declaration: 'class',
      extension_declaration: 'class',
    },
  },
  elixir: { defs: {} },
  zig: { defs: { FnProto: 'function', function_declaration: 'function' } },
  ocaml: { defs: { value_definition: 'function', type_definition: 'type', module_definition: 'module' } },
  solidity: {
    defs: {
      contract_declaration: 'class',
      interface_declaration: 'interface',
      library_declaration: 'module',
      function_definition: 'function',
      modifier_definition: 'function',
      event_definition: 'type',
      struct_declaration: 'struct',
      enum_declaration: 'enum',
    },
  },
  objc: {
    defs: {
      function_definition: 'function',
      class_interface: 'class',
      class_implementation: 'class',
      protocol_declaration: 'interface',
      method_definition: 'method',
    },
  },
  elm: { defs: { value_declaration: 'function', type_declaration: 'type', type_alias_declaration: 'type' } },
};
