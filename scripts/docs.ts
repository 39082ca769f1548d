/**
 * `npm run docs`: writes the API reference (docs/api/, one page per public module) from the
 * TSDoc of the sources, then reports exports without TSDoc and broken links of README.md and
 * docs/. Exits non-zero when anything is missing or broken; `test/node/docs.test.ts` checks the
 * same in `npm test`, and that the committed reference is current.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { API_DIR, generateApiReference } from "./docs/apiReference.ts"
import { brokenLinks } from "./docs/links.ts"

const root = join(dirname(fileURLToPath(import.meta.url)), "..")
const { pages, missing } = generateApiReference(root)

mkdirSync(join(root, API_DIR), { recursive: true })
for (const stale of readdirSync(join(root, API_DIR))) {
  if (!pages.has(`${API_DIR}/${stale}`)) rmSync(join(root, API_DIR, stale))
}
for (const [path, content] of pages) writeFileSync(join(root, path), content)
console.log(`wrote ${pages.size} pages to ${API_DIR}/`)

const broken = brokenLinks(root)
for (const entry of missing) console.error(`missing TSDoc: ${entry}`)
for (const link of broken)
  console.error(`broken link: ${link.file}:${link.line} ${link.target}: ${link.problem}`)
if (missing.length > 0 || broken.length > 0) process.exit(1)
