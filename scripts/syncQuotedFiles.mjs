// Rewrites every README.md / docs/ code block that names an examples/consumer file on its first
// line with that file's current text (the readme test checks they are equal).
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const pages = ["README.md"]
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) walk(path)
    else if (path.endsWith(".md")) pages.push(path)
  }
}
walk("docs")
const block = /^(```\w*\n(?:\/\/|#) (examples\/consumer\/\S+)\n)([\s\S]*?)^```$/gm
for (const page of pages) {
  const text = readFileSync(page, "utf8")
  const next = text.replace(block, (_all, head, path) => `${head}${readFileSync(path, "utf8")}\`\`\``)
  if (next !== text) {
    writeFileSync(page, next)
    console.log(`synced ${page}`)
  }
}
