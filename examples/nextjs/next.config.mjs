// Only for running the example inside the repository, where `airlock-shield` is the TypeScript
// source (jsconfig.json "paths"), whose imports name their files `.js`: webpack is told a `.js`
// import may be a `.ts` file. An app that installed the package needs none of this.
export default {
  experimental: { extensionAlias: { '.js': ['.ts', '.js'] } },
}
