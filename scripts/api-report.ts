// The public surface of each package, written down: every name its entry points export, with its
// kind and type (signatures, members), sorted, one report per package (packages/*/api-report.md).
// packages/core/test/api-report.test.ts fails when a report differs from the sources, so a change
// to the public surface is a visible diff in review; it also fails when an exported name has no
// TSDoc or no @example. After an intended change, write the reports anew:
//   node --conditions=kit-source --import tsx scripts/api-report.ts --write   (npm run api:report)
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('../', import.meta.url));

/** Each package, its entry points (as a host imports them) and its report. */
export const PACKAGES: ReadonlyArray<{
  readonly report: string;
  readonly entries: ReadonlyArray<{ readonly specifier: string; readonly file: string }>;
}> = [
  {
    report: 'packages/core/api-report.md',
    entries: [
      { specifier: '@kit/core', file: 'packages/core/src/index.ts' },
      { specifier: '@kit/core/extend', file: 'packages/core/src/extend.ts' },
    ],
  },
  {
    report: 'packages/store-redis/api-report.md',
    entries: [{ specifier: '@kit/store-redis', file: 'packages/store-redis/src/index.ts' }],
  },
  {
    report: 'packages/autocrud/api-report.md',
    entries: [
      { specifier: '@kit/autocrud', file: 'packages/autocrud/src/index.ts' },
      { specifier: '@kit/autocrud/extend', file: 'packages/autocrud/src/extend.ts' },
    ],
  },
];

const FLAGS =
  ts.TypeFormatFlags.NoTruncation |
  ts.TypeFormatFlags.WriteArrayAsGenericType |
  ts.TypeFormatFlags.UseSingleQuotesForStringLiteralType;

function program(): ts.Program {
  const config = ts.readConfigFile(path.join(root, 'tsconfig.base.json'), (f) =>
    readFileSync(f, 'utf8'),
  );
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, root);
  return ts.createProgram(
    PACKAGES.flatMap((p) => p.entries.map((e) => path.join(root, e.file))),
    { ...options, noEmit: true, declaration: false },
  );
}

function isPublicMember(symbol: ts.Symbol): boolean {
  if (symbol.name.startsWith('#') || symbol.name.startsWith('__')) return false;
  const modifiers = symbol.valueDeclaration
    ? ts.getCombinedModifierFlags(symbol.valueDeclaration)
    : 0;
  return (modifiers & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) === 0;
}

function members(checker: ts.TypeChecker, type: ts.Type, at: ts.Node): string[] {
  const out: string[] = [];
  for (const sig of type.getCallSignatures())
    out.push(`  ${checker.signatureToString(sig, at, FLAGS)}`);
  for (const sig of type.getConstructSignatures())
    out.push(`  new ${checker.signatureToString(sig, at, FLAGS)}`);
  for (const info of checker.getIndexInfosOfType(type))
    out.push(
      `  [key: ${checker.typeToString(info.keyType, at, FLAGS)}]: ${checker.typeToString(info.type, at, FLAGS)}`,
    );
  for (const prop of checker.getPropertiesOfType(type)) {
    if (!isPublicMember(prop)) continue;
    const decl = prop.valueDeclaration ?? prop.declarations?.[0];
    const propType = checker.getTypeOfSymbolAtLocation(prop, decl ?? at);
    const readonly =
      decl && ts.getCombinedModifierFlags(decl) & ts.ModifierFlags.Readonly ? 'readonly ' : '';
    const optional = prop.flags & ts.SymbolFlags.Optional ? '?' : '';
    const signatures = prop.flags & ts.SymbolFlags.Method ? propType.getCallSignatures() : [];
    if (signatures.length > 0)
      for (const sig of signatures)
        out.push(`  ${prop.name}${optional}${checker.signatureToString(sig, at, FLAGS)}`);
    else
      out.push(
        `  ${readonly}${prop.name}${optional}: ${checker.typeToString(propType, at, FLAGS)}`,
      );
  }
  return out;
}

/** `import("./kit/kit.js").HostInstance` -> `HostInstance`: where a type is declared is not part of the surface. */
function unqualified(line: string): string {
  return line.replace(/import\("[^"]+"\)\./g, '');
}

/** A const; an error catalogue as its codes and their statuses (the codes are what hosts match on). */
function variable(checker: ts.TypeChecker, name: string, symbol: ts.Symbol, at: ts.Node): string[] {
  const type = checker.getTypeOfSymbolAtLocation(symbol, at);
  if (
    type.aliasSymbol?.name !== 'KitErrorCatalogue' &&
    type.getSymbol()?.name !== 'KitErrorCatalogue'
  )
    return [`const ${name}: ${checker.typeToString(type, at, FLAGS)}`];
  const codes = checker.getTypeOfSymbolAtLocation(
    checker.getPropertyOfType(type, 'codes') as ts.Symbol,
    at,
  );
  const lines = [`const ${name}: KitErrorCatalogue, codes:`];
  for (const code of checker.getPropertiesOfType(codes)) {
    const spec = checker.getTypeOfSymbolAtLocation(code, at);
    const status = checker.getPropertyOfType(spec, 'status');
    lines.push(
      `  ${code.name}${status ? ` (${checker.typeToString(checker.getTypeOfSymbolAtLocation(status, at))})` : ''}`,
    );
  }
  return lines;
}

/** One exported name: its kind and its type, as lines. */
function describe(
  checker: ts.TypeChecker,
  exported: ts.Symbol,
  at: ts.Node,
): { lines: string[]; decl: ts.Declaration | undefined } {
  const symbol =
    exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
  const decl = symbol.declarations?.[0];
  const lines: string[] = [];
  if (symbol.flags & ts.SymbolFlags.Class) {
    lines.push(`class ${exported.name}`);
    const staticType = checker.getTypeOfSymbolAtLocation(symbol, at);
    lines.push(
      ...members(checker, staticType, at)
        .filter((l) => !l.startsWith('  prototype:'))
        .map((l) => (l.startsWith('  new ') ? l : `  static${l.slice(1)}`)),
    );
    lines.push(...members(checker, checker.getDeclaredTypeOfSymbol(symbol), at));
  } else if (symbol.flags & ts.SymbolFlags.Interface) {
    lines.push(
      `interface ${exported.name}`,
      ...members(checker, checker.getDeclaredTypeOfSymbol(symbol), at),
    );
  } else if (symbol.flags & ts.SymbolFlags.TypeAlias) {
    const alias = symbol.declarations?.find(ts.isTypeAliasDeclaration);
    const params = alias?.typeParameters
      ? `<${alias.typeParameters.map((p) => p.getText()).join(', ')}>`
      : '';
    const text = alias
      ? alias.type.getText().replace(/\s+/g, ' ')
      : checker.typeToString(checker.getDeclaredTypeOfSymbol(symbol), at, FLAGS);
    lines.push(`type ${exported.name}${params} = ${text}`);
  } else if (symbol.flags & ts.SymbolFlags.Function) {
    for (const sig of checker.getTypeOfSymbolAtLocation(symbol, at).getCallSignatures())
      lines.push(`function ${exported.name}${checker.signatureToString(sig, at, FLAGS)}`);
  } else if (symbol.flags & ts.SymbolFlags.Variable) {
    lines.push(...variable(checker, exported.name, symbol, at));
  } else {
    lines.push(`${ts.SymbolFlags[symbol.flags] ?? 'symbol'} ${exported.name}`);
  }
  // A name that is a value and a type at once (`CrudOperations`, `EndpointFormat`): both.
  if (symbol.flags & ts.SymbolFlags.Variable && symbol.flags & ts.SymbolFlags.TypeAlias)
    lines.push(...variable(checker, exported.name, symbol, at));
  return { lines: lines.map(unqualified), decl };
}

/** The names exported by each entry point, with their TSDoc state. */
export function surface(): Array<{ report: string; text: string; undocumented: string[] }> {
  const prog = program();
  const checker = prog.getTypeChecker();
  return PACKAGES.map((pkg) => {
    const sections: string[] = [];
    const undocumented: string[] = [];
    for (const entry of pkg.entries) {
      const source = prog.getSourceFile(path.join(root, entry.file));
      if (!source) throw new Error(`${entry.file} is not in the program`);
      const moduleSymbol = checker.getSymbolAtLocation(source);
      const exports = moduleSymbol ? checker.getExportsOfModule(moduleSymbol) : [];
      const blocks: string[] = [];
      for (const exported of [...exports].sort((a, b) => a.name.localeCompare(b.name))) {
        const { lines, decl } = describe(checker, exported, source);
        blocks.push(lines.join('\n'));
        const docs = decl ? ts.getJSDocCommentsAndTags(decl) : [];
        const hasDoc = docs.length > 0;
        const hasExample = decl
          ? ts.getJSDocTags(decl).some((t) => t.tagName.text === 'example')
          : false;
        if (!hasDoc || !hasExample)
          undocumented.push(
            `${entry.specifier}: ${exported.name} (${!hasDoc ? 'no TSDoc' : 'no @example'})`,
          );
      }
      sections.push(
        `## ${entry.specifier}\n\n${exports.length} names.\n\n\`\`\`text\n${blocks.join('\n\n')}\n\`\`\``,
      );
    }
    const header = `# API report: ${pkg.entries[0]?.specifier}\n\nGenerated by \`npm run api:report\` (scripts/api-report.ts) from the entry points' exports. Checked by packages/core/test/api-report.test.ts: a change to the public surface changes this file.\n`;
    return { report: pkg.report, text: `${header}\n${sections.join('\n\n')}\n`, undocumented };
  });
}

if (process.argv.includes('--write')) {
  for (const { report, text, undocumented } of surface()) {
    writeFileSync(path.join(root, report), text);
    console.log(
      `${report}: written${undocumented.length ? `; without TSDoc or @example: ${undocumented.join(', ')}` : ''}`,
    );
  }
}
