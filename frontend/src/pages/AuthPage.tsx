import { useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { api, login, register } from "../api/client";
import { failureText, useWrite } from "../api/mutations";
import { keys } from "../api/queries";

export default function AuthPage({ notice = null, onAuthenticated }: { notice?: string | null; onAuthenticated: () => Promise<void> }) {
  const [mode, setMode] = useState<"login" | "register">("login");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  // With a company directory, people log in with their directory name as well as an e-mail;
  // with sign-up closed, it is not offered. Until the server says, an open e-mail login.
  const { data: methods } = useQuery({
    queryKey: keys.loginMethods,
    queryFn: async () => (await api.GET("/api/v1/auth/methods")).data ?? null,
    staleTime: Infinity,
  });
  const byName = mode === "login" && Boolean(methods?.directory);
  const canRegister = methods?.registration ?? true;
  const sso = methods?.single_sign_on ?? null;
  // Passwords off (single sign-on only): the form stays for the break-glass account, folded.
  const passwords = !methods || methods.password || methods.directory;
  const [showForm, setShowForm] = useState(false);
  const formShown = passwords || showForm;
  const returnTo = window.location.pathname + window.location.search;

  const signIn = useWrite({
    async write() {
      await (mode === "login" ? login(email, password) : register(email, password));
      await onAuthenticated();
    },
  });
  const error = signIn.error ? failureText(signIn.error, "Something went wrong") : null;
  const busy = signIn.isPending;

  function submit(event: FormEvent) {
    event.preventDefault();
    signIn.mutate();
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
        {sso && mode === "login" && (
          <a className="sso" href={`${sso.url}?next=${encodeURIComponent(returnTo)}`}>
            Sign in with {sso.name}
          </a>
        )}
        {sso && formShown && mode === "login" && <p className="muted or">or</p>}
        {!formShown && (
          <button type="button" className="link" onClick={() => setShowForm(true)}>
            Administrator login
          </button>
        )}
        {formShown && (
          <>
            <label>
              {byName ? "Email or user name" : "Email"}
              <input
                type={byName ? "text" : "email"}
                autoComplete={byName ? "username" : "email"}
                autoCapitalize="none"
                required
                value={email}
                onChange={(e) => setEmail(e.target.value)}
              />
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
            <button type="submit" className={sso ? "" : "primary"} disabled={busy}>
              {mode === "login" ? "Log in" : "Sign up"}
            </button>
          </>
        )}
        {(canRegister || mode === "register") && (
          <button type="button" className="link" onClick={() => setMode(mode === "login" ? "register" : "login")}>
            {mode === "login" ? "No account yet? Sign up" : "Have an account? Log in"}
          </button>
        )}
      </form>
    </main>
  );
}
