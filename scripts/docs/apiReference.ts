/**
 * The API reference of the public modules (the subpaths of package.json `exports`), generated
 * from their TSDoc with the TypeScript compiler API: one Markdown page per module under
 * `docs/api/`, and an index. Each export shows its TSDoc and its declaration as written in the
 * source (a re-export shows the declaration it names). An export without TSDoc, or a module
 * without a header comment, is reported as missing.
 *
 * Files under `internal/` mark every export `@internal`: a public module that re-exports one
 * makes it public, and the text of its `@internal` tag is then its documentation.
 */
import { readFileSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import ts from "typescript"

/** One public module: its subpath, its name in the reference, and its source file. */
export interface PublicModule {
  readonly subpath: string
  readonly name: string
  readonly source: string
}

/** The generated pages (path relative to the repository → content) and what lacks TSDoc. */
export interface ApiReference {
  readonly pages: ReadonlyMap<string, string>
  readonly missing: ReadonlyArray<string>
}

/** The folder the reference is written to, relative to the repository. */
export const API_DIR = "docs/api"

const MAX_DECLARATION_LINES = 100

/** The public modules named by package.json `exports`, the root barrel first. */
export const publicModules = (root: string): ReadonlyArray<PublicModule> => {
  const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
    readonly exports: Record<string, { readonly default: string } | string | null>
  }
  return Object.entries(manifest.exports).flatMap(([subpath, target]) =>
    typeof target === "object" && target !== null
      ? [
          {
            subpath,
            name: subpath === "." ? "index" : subpath.slice(2),
            source: target.default.replace(/^\.\/dist\//, "src/").replace(/\.js$/, ".ts"),
          },
        ]
      : [],
  )
}

const program = (root: string, files: ReadonlyArray<string>) => {
  const config = ts.readConfigFile(join(root, "tsconfig.json"), ts.sys.readFile)
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, root)
  return ts.createProgram({
    rootNames: files.map((file) => join(root, file)),
    options: { ...parsed.options, noEmit: true },
  })
}

/** The module's header: the first JSDoc block of the file, when it precedes the first statement. */
const headerOf = (file: ts.SourceFile): string => {
  const text = file.getFullText()
  const first = file.statements[0]
  const ranges = ts.getLeadingCommentRanges(text, 0) ?? []
  const range = ranges.find((comment) => text.startsWith("/**", comment.pos))
  if (range === undefined) return ""
  // A single comment before a declaration is that declaration's, not the module's.
  const declares = first !== undefined && !ts.isImportDeclaration(first) && !ts.isExportDeclaration(first)
  if (declares && ranges.length === 1) return ""
  return text
    .slice(range.pos + 3, range.end - 2)
    .split("\n")
    .map((line) => line.replace(/^\s*\* ?/, ""))
    .join("\n")
    .trim()
}

const firstParagraph = (text: string) => text.split(/\n\s*\n/)[0]?.replace(/\s*\n\s*/g, " ") ?? ""

const kindOf = (declaration: ts.Declaration): string => {
  if (ts.isClassDeclaration(declaration)) return "class"
  if (ts.isInterfaceDeclaration(declaration)) return "interface"
  if (ts.isTypeAliasDeclaration(declaration)) return "type"
  if (ts.isFunctionDeclaration(declaration)) return "function"
  if (ts.isVariableDeclaration(declaration)) return "const"
  if (ts.isModuleDeclaration(declaration)) return "namespace"
  if (ts.isEnumDeclaration(declaration)) return "enum"
  return "export"
}

/** The declaration as written: the statement around a variable, capped in length. */
const sourceOf = (declaration: ts.Declaration): string => {
  const node = ts.isVariableDeclaration(declaration) ? declaration.parent.parent : declaration
  const lines = node
    .getText()
    .replace(/^export\s+/, "")
    .split("\n")
  const text =
    lines.length > MAX_DECLARATION_LINES
      ? [...lines.slice(0, MAX_DECLARATION_LINES), "// … (continues in the source)"]
      : lines
  // Re-indent continuation lines that the source indented under the export.
  return text.join("\n")
}

const signatureOf = (checker: ts.TypeChecker, declaration: ts.FunctionDeclaration, name: string) => {
  const signature = checker.getSignatureFromDeclaration(declaration)
  return signature === undefined
    ? name
    : `function ${name}${checker.signatureToString(signature, declaration, ts.TypeFormatFlags.NoTruncation)}`
}

const fence = (code: string) => `\`\`\`ts\n${code}\n\`\`\``

const docOf = (checker: ts.TypeChecker, symbol: ts.Symbol) => {
  const comment = ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim()
  if (comment !== "") return comment
  const internal = symbol.getJsDocTags(checker).find((tag) => tag.name === "internal")
  return ts.displayPartsToString(internal?.text ?? []).trim()
}

const pageOf = (module: PublicModule) => `${API_DIR}/${module.name}.md`

// No line numbers: the reference changes with what a declaration says, not with where it is.
const sourceLink = (root: string, from: string, declaration: ts.Declaration) => {
  const path = relative(root, declaration.getSourceFile().fileName)
  return `[${path}](${relative(dirname(from), path)})`
}

/** Generates the reference of every public module of the repository at `root`. */
export const generateApiReference = (root: string): ApiReference => {
  const modules = publicModules(root)
  const built = program(
    root,
    modules.map((module) => module.source),
  )
  const checker = built.getTypeChecker()
  const pages = new Map<string, string>()
  const missing: Array<string> = []
  const index: Array<string> = []

  for (const module of modules) {
    const file = built.getSourceFile(join(root, module.source))
    if (file === undefined) throw new Error(`${module.source} is not part of the program`)
    const header = headerOf(file)
    if (header === "") missing.push(`${module.source}: the module has no header comment`)
    const moduleSymbol = checker.getSymbolAtLocation(file)
    const exports = moduleSymbol === undefined ? [] : checker.getExportsOfModule(moduleSymbol)
    const page = pageOf(module)
    const importPath =
      module.subpath === "."
        ? "@effect-agent/platform-cloudflare"
        : `@effect-agent/platform-cloudflare/${module.name}`

    if (module.subpath === ".") {
      index.push(
        `- [\`${importPath}\`](#the-root-barrel): every module below as a namespace, but \`Testing\``,
      )
      continue
    }
    index.push(`- [\`${module.name}\`](${module.name}.md): ${firstParagraph(header)}`)

    const sections: Array<string> = []
    const names = exports.map((symbol) => symbol.getName()).sort((a, b) => a.localeCompare(b))
    for (const name of names) {
      const exported = exports.find((symbol) => symbol.getName() === name)
      if (exported === undefined) continue
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported
      const doc = docOf(checker, symbol)
      if (doc === "") missing.push(`${module.source}: ${name} has no TSDoc`)
      // An overloaded function shows its overloads, not its implementation.
      const all = symbol.getDeclarations() ?? []
      const overloaded = all.filter((declaration) => ts.isFunctionDeclaration(declaration)).length > 1
      const declarations = all.filter(
        (declaration) =>
          !(overloaded && ts.isFunctionDeclaration(declaration) && declaration.body !== undefined),
      )
      const kinds = [...new Set(declarations.map(kindOf))].join(", ")
      const code = declarations.map((declaration) =>
        ts.isFunctionDeclaration(declaration)
          ? signatureOf(checker, declaration, name)
          : sourceOf(declaration),
      )
      const where =
        declarations[0] === undefined ? "" : `\n\nDefined in ${sourceLink(root, page, declarations[0])}.`
      sections.push(
        [
          `### ${name}`,
          `_${kinds}_`,
          doc === "" ? "_No documentation._" : doc,
          fence(code.join("\n\n")) + where,
        ].join("\n\n"),
      )
    }
    pages.set(
      page,
      [
        `# ${module.name}`,
        "<!-- Generated by `npm run docs` from the TSDoc of the sources; do not edit. -->",
        fence(`import * as ${module.name} from "${importPath}"`),
        header,
        `Source: [${module.source}](${relative(dirname(page), module.source)})`,
        "## Exports",
        names.map((name) => `[\`${name}\`](#${name.toLowerCase()})`).join(" · "),
        ...sections,
      ].join("\n\n") + "\n",
    )
  }

  pages.set(
    `${API_DIR}/README.md`,
    [
      "# API reference",
      "<!-- Generated by `npm run docs` from the TSDoc of the sources; do not edit. -->",
      "One page per public module: each is a subpath of the package " +
        "(`@effect-agent/platform-cloudflare/<Module>`), generated from the TSDoc of its source. " +
        "The [guide](../../README.md) shows how they fit together.",
      index.slice(1).join("\n"),
      "## The root barrel",
      '`import { ThreadObject, ThreadClient } from "@effect-agent/platform-cloudflare"` names every ' +
        "module above as a namespace, except `Testing`, which only tests import.",
    ].join("\n\n") + "\n",
  )
  return { pages, missing }
}
