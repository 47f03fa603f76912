import { useState, type FormEvent } from "react";
import { login, register } from "../api/client";

export default function AuthPage({ notice = null, onAuthenticated }: { notice?: string | null; onAuthenticated: () => Promise<void> }) {
  const [mode, setMode] = useState<"login" | "register">("login");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await (mode === "login" ? login(email, password) : register(email, password));
      await onAuthenticated();
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : "Something went wrong");
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="auth">
      <form onSubmit={submit} className="card" aria-labelledby="auth-title">
        <h1 id="auth-title">{mode === "login" ? "Log in to docchat" : "Create your account"}</h1>
        {notice && (
          <p role="status" className="notice">
            {notice}
          </p>
        )}
        <p className="muted">Chat with your documents, with answers that cite their pages.</p>
        <label>
          Email
          <input type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />
        </label>
        <label>
          Password
          <input
            type="password"
            autoComplete={mode === "login" ? "current-password" : "new-password"}
            minLength={mode === "register" ? 8 : undefined}
            required
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
        </label>
        {error && (
          <p role="alert" className="error">
            {error}
          </p>
        )}
        <button type="submit" className="primary" disabled={busy}>
          {mode === "login" ? "Log in" : "Sign up"}
        </button>
        <button type="button" className="link" onClick={() => setMode(mode === "login" ? "register" : "login")}>
          {mode === "login" ? "No account yet? Sign up" : "Have an account? Log in"}
        </button>
      </form>
    </main>
  );
}
