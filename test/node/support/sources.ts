/**
 * The package's sources as the conventions test reads them: every module under `src/`, parsed
 * once with TypeScript, with its relative imports and the names the conventions govern.
 *
 * An import is type-only when its declaration says so (`import type`, `export type`): under
 * `verbatimModuleSyntax` an `import { type A }` still loads its module at run time.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve, sep } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

/** One relative import of a module: its target (a path under `src/`) and whether only types cross it. */
export interface Import {
  readonly to: string
  readonly typeOnly: boolean
}

/** One module under `src/`, by its path there (`core/Identifiers.ts`). */
export interface SourceModule {
  readonly path: string
  readonly source: ts.SourceFile
  readonly imports: ReadonlyArray<Import>
}

/** A name found in a module, with where it is (`path:line`). */
export interface Found {
  readonly name: string
  readonly at: string
}

const SRC = fileURLToPath(new URL("../../../src/", import.meta.url))

const walk = (directory: string): Array<string> =>
  readdirSync(directory).flatMap((entry) => {
    const path = join(directory, entry)
    if (statSync(path).isDirectory()) return walk(path)
    return path.endsWith(".ts") ? [path] : []
  })

const toPosix = (path: string) => path.split(sep).join("/")

const importsOf = (absolute: string, source: ts.SourceFile): Array<Import> =>
  source.statements.flatMap((statement): Array<Import> => {
    let specifier: ts.Expression | undefined
    let typeOnly = false
    if (ts.isImportDeclaration(statement)) {
      specifier = statement.moduleSpecifier
      typeOnly = statement.importClause?.isTypeOnly ?? false
    } else if (ts.isExportDeclaration(statement)) {
      specifier = statement.moduleSpecifier
      typeOnly = statement.isTypeOnly
    }
    if (specifier === undefined || !ts.isStringLiteral(specifier) || !specifier.text.startsWith("."))
      return []
    const to = toPosix(relative(SRC, resolve(dirname(absolute), specifier.text)))
    return [{ to, typeOnly }]
  })

/** Every module under `src/`. */
export const readSources = (): ReadonlyArray<SourceModule> =>
  walk(SRC).map((absolute) => {
    const source = ts.createSourceFile(absolute, readFileSync(absolute, "utf8"), ts.ScriptTarget.Latest, true)
    return { path: toPosix(relative(SRC, absolute)), source, imports: importsOf(absolute, source) }
  })

const at = (module: SourceModule, node: ts.Node) =>
  `${module.path}:${module.source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`

const visit = (node: ts.Node, f: (node: ts.Node) => void) => {
  f(node)
  ts.forEachChild(node, (child) => visit(child, f))
}

/** Constructors whose first argument is an identifier string (when given). */
const IDENTIFIED = new Set([
  "Context.Reference",
  "Schema.Class",
  "Schema.ErrorClass",
  "Schema.TaggedClass",
  "Schema.TaggedError",
])

/**
 * The identifier strings of services, references and Schema classes: `Context.Service<…>()(id)`,
 * `Context.Reference<…>(id, …)`, `Schema.Class<…>(id)`, and the optional identifier of
 * `Schema.TaggedError` and `Schema.TaggedClass` (their tag is not an identifier). An identifier
 * that is not a string literal is reported as its source text.
 */
export const identifiersOf = (module: SourceModule): Array<Found> => {
  const found: Array<Found> = []
  visit(module.source, (node) => {
    if (!ts.isCallExpression(node)) return
    const callee = node.expression.getText(module.source)
    let id: ts.Expression | undefined
    if (callee === "Context.Service") {
      const outer = node.parent
      if (ts.isCallExpression(outer) && outer.expression === node) id = outer.arguments[0]
    } else if (IDENTIFIED.has(callee)) {
      id = node.arguments[0]
    }
    if (id === undefined) return
    found.push({ name: ts.isStringLiteralLike(id) ? id.text : id.getText(module.source), at: at(module, id) })
  })
  return found
}

/** Whether an initializer is a literal: numbers, strings, booleans, and arrays or objects of them. */
const isLiteral = (node: ts.Expression): boolean => {
  if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node))
    return isLiteral(node.expression)
  if (ts.isNumericLiteral(node) || ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node))
    return true
  if (node.kind === ts.SyntaxKind.TrueKeyword || node.kind === ts.SyntaxKind.FalseKeyword) return true
  if (ts.isPrefixUnaryExpression(node)) return isLiteral(node.operand)
  if (ts.isBinaryExpression(node)) return isLiteral(node.left) && isLiteral(node.right)
  if (ts.isArrayLiteralExpression(node))
    return node.elements.length > 0 && node.elements.every((element) => isLiteral(element))
  if (ts.isObjectLiteralExpression(node))
    return (
      node.properties.length > 0 &&
      node.properties.every(
        (property) => ts.isPropertyAssignment(property) && isLiteral(property.initializer),
      )
    )
  return false
}

/** Module-level `const`s (exported or not) whose value is a literal. */
export const literalConstantsOf = (module: SourceModule): Array<Found> =>
  module.source.statements.flatMap((statement) => {
    if (!ts.isVariableStatement(statement)) return []
    if ((statement.declarationList.flags & ts.NodeFlags.Const) === 0) return []
    return statement.declarationList.declarations.flatMap((declaration) =>
      ts.isIdentifier(declaration.name) &&
      declaration.initializer !== undefined &&
      isLiteral(declaration.initializer)
        ? [{ name: declaration.name.text, at: at(module, declaration.name) }]
        : [],
    )
  })

const isNumberType = (type: ts.TypeNode | undefined): boolean =>
  type !== undefined &&
  (type.kind === ts.SyntaxKind.NumberKeyword ||
    (ts.isUnionTypeNode(type) && type.types.some((member) => isNumberType(member))))

/**
 * Field names a module declares: properties of interfaces and type literals (`numeric` when
 * typed `number`), and properties of object literals (Schema fields, defaults, options).
 */
export const fieldsOf = (module: SourceModule): Array<Found & { readonly numeric: boolean }> => {
  const found: Array<Found & { readonly numeric: boolean }> = []
  visit(module.source, (node) => {
    if (ts.isPropertySignature(node) && ts.isIdentifier(node.name)) {
      found.push({ name: node.name.text, at: at(module, node.name), numeric: isNumberType(node.type) })
    } else if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name)) {
      found.push({ name: node.name.text, at: at(module, node.name), numeric: false })
    }
  })
  return found
}

/** The import cycles of a graph: its strongly connected components of more than one module. */
export const cyclesOf = (
  modules: ReadonlyArray<SourceModule>,
  follows: (from: SourceModule, edge: Import) => boolean,
): Array<Array<string>> => {
  const byPath = new Map(modules.map((module) => [module.path, module]))
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const components: Array<Array<string>> = []
  const connect = (path: string) => {
    index.set(path, index.size)
    low.set(path, index.get(path)!)
    stack.push(path)
    onStack.add(path)
    const module = byPath.get(path)!
    for (const edge of module.imports) {
      if (!byPath.has(edge.to) || !follows(module, edge)) continue
      if (!index.has(edge.to)) {
        connect(edge.to)
        low.set(path, Math.min(low.get(path)!, low.get(edge.to)!))
      } else if (onStack.has(edge.to)) {
        low.set(path, Math.min(low.get(path)!, index.get(edge.to)!))
      }
    }
    if (low.get(path) !== index.get(path)) return
    const component: Array<string> = []
    let member: string | undefined
    do {
      member = stack.pop()!
      onStack.delete(member)
      component.push(member)
    } while (member !== path)
    if (component.length > 1) components.push(component.sort())
  }
  for (const module of modules) if (!index.has(module.path)) connect(module.path)
  return components
}
