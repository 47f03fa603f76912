// The web app's linter (npm run lint; run by scripts/test.sh): ESLint's and typescript-eslint's
// recommended rules, the rules of React hooks (effects that read stale values), and writes only
// through useWrite (src/api/mutations.ts).
import js from "@eslint/js";
import reactHooks from "eslint-plugin-react-hooks";
import globals from "globals";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist", "node_modules", "src/api/schema.d.ts"] },
  {
    files: ["**/*.{ts,tsx}"],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    languageOptions: { ecmaVersion: 2022, globals: globals.browser },
    plugins: { "react-hooks": reactHooks },
    rules: {
      ...reactHooks.configs.recommended.rules,
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_" }],
    },
  },
  {
    // A write awaited or fired in place is a hand-rolled write with its own working and error
    // state: writes go through useWrite (src/api/mutations.ts), one error path for all.
    files: ["src/**/*.{ts,tsx}"],
    ignores: ["src/api/**"],
    rules: {
      "no-restricted-syntax": [
        "error",
        ...["AwaitExpression", "ExpressionStatement", "UnaryExpression[operator='void']"].map((parent) => ({
          selector: `${parent} > CallExpression[callee.object.name='api'][callee.property.name=/^(POST|PUT|PATCH|DELETE)$/]`,
          message: "Send writes through useWrite (src/api/mutations.ts): its mutation gives the working state, the error shown and the refetch.",
        })),
      ],
    },
  },
);
