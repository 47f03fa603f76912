import PasswordForm from "../components/PasswordForm";

/** Shown after logging in with a password an administrator set: nothing else works until it changes. */
export default function ChangePasswordPage({ email, onChanged, onLogout }: { email: string; onChanged: () => void; onLogout: () => void }) {
  return (
    <main className="auth">
      <section className="card" aria-labelledby="change-title">
        <h1 id="change-title">Choose your password</h1>
        <p className="muted">
          An administrator set the password of <strong>{email}</strong>. Choose one of your own to continue.
        </p>
        <PasswordForm onChanged={onChanged} currentLabel="Password you were given" />
        <button type="button" className="link" onClick={onLogout}>
          Log out
        </button>
      </section>
    </main>
  );
}
