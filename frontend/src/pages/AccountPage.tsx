import { useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { api, downloadMyData, logout, type Schemas, type User } from "../api/client";
import { failureText, latestFailure, unwrap, useWrite } from "../api/mutations";
import { keys, queryClient, useUsage } from "../api/queries";
import PasswordForm from "../components/PasswordForm";
import ThemePicker from "../components/ThemePicker";
import { useModalDialog } from "../dialogs";
import { counted, fileSize } from "../format";

type ApiKey = Schemas["ApiKeyRead"];
type Scope = Schemas["Scope"];
const SCOPES: { scope: Scope; label: string }[] = [
  { scope: "read", label: "Read documents and chats" },
  { scope: "chat", label: "Ask questions (also /v1 for OpenAI clients)" },
  { scope: "upload", label: "Upload and delete documents" },
  { scope: "admin", label: "Administration" },
];

function keyState(key: ApiKey): string {
  if (key.revoked_at) return `revoked ${new Date(key.revoked_at).toLocaleDateString()}`;
  if (key.expires_at && new Date(key.expires_at) <= new Date()) return "expired";
  return key.last_used_at ? `last used ${new Date(key.last_used_at).toLocaleString()}` : "never used";
}

function Usage() {
  const usage = useUsage();
  if (!usage) return null;
  return (
    <dl className="stats">
      <dt>Tokens today</dt>
      <dd>
        {usage.tokens_today.toLocaleString()}
        {usage.daily_token_limit != null ? ` of ${usage.daily_token_limit.toLocaleString()}` : " (no limit)"}
      </dd>
      <dt>Stored files</dt>
      <dd>
        {fileSize(usage.stored_bytes)}
        {usage.storage_limit_bytes != null ? ` of ${fileSize(usage.storage_limit_bytes)}` : " (no limit)"}
      </dd>
    </dl>
  );
}

function ApiKeys({ user }: { user: User }) {
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<Scope[]>(["read", "chat"]);
  const [expires, setExpires] = useState("");
  const [secret, setSecret] = useState<string | null>(null);

  const listed =
    useQuery({
      queryKey: keys.apiKeys,
      queryFn: async () => (await api.GET("/api/v1/api-keys")).data ?? [],
    }).data ?? [];
  const add = useWrite({
    write: (expires_at: string | null) => unwrap(api.POST("/api/v1/api-keys", { body: { name, scopes, expires_at } }), "The key could not be created"),
    invalidates: [keys.apiKeys],
    onSuccess(created) {
      setSecret(created.secret);
      setName("");
    },
  });
  const revoke = useWrite({
    write: (key: ApiKey) => unwrap(api.DELETE("/api/v1/api-keys/{key_id}", { params: { path: { key_id: key.id } } }), "The key could not be revoked"),
    invalidates: [keys.apiKeys],
    invalidateOnError: true,
  });
  const error = latestFailure(add, revoke);

  function create(event: FormEvent) {
    event.preventDefault();
    add.mutate(expires ? new Date(`${expires}T23:59:59`).toISOString() : null);
  }

  function confirmRevoke(key: ApiKey) {
    if (window.confirm(`Revoke “${key.name}”? Programs using it stop working at once.`)) revoke.mutate(key);
  }

  const offered = SCOPES.filter(({ scope }) => scope !== "admin" || user.role === "admin");
  return (
    <>
      <p className="muted">
        For scripts, mobile apps and OpenAI clients: send the key as <code>Authorization: Bearer …</code>, or set it as{" "}
        <code>api_key</code> with <code>base_url</code> <code>{window.location.origin}/v1</code>.
      </p>
      {secret && (
        <div className="notice" role="status">
          <p>Copy your new key now: it will not be shown again.</p>
          <code className="secret" data-testid="new-key">{secret}</code>
          <div className="row">
            <button type="button" onClick={() => void navigator.clipboard?.writeText(secret)}>
              Copy
            </button>
            <button type="button" onClick={() => setSecret(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <form onSubmit={create} className="stack" aria-label="New API key">
        <label>
          Name
          <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} placeholder="e.g. laptop script" />
        </label>
        <fieldset>
          <legend>Allowed to</legend>
          {offered.map(({ scope, label }) => (
            <label key={scope} className="check">
              <input
                type="checkbox"
                checked={scopes.includes(scope)}
                onChange={(e) => setScopes(e.target.checked ? [...scopes, scope] : scopes.filter((s) => s !== scope))}
              />
              {label}
            </label>
          ))}
        </fieldset>
        <label>
          Expires (optional)
          <input type="date" value={expires} onChange={(e) => setExpires(e.target.value)} />
        </label>
        {error && (
          <p role="alert" className="error">
            {error}
          </p>
        )}
        <button type="submit" className="primary" disabled={!name.trim() || scopes.length === 0}>
          Create key
        </button>
      </form>
      <div className="table-scroll" tabIndex={0} role="region" aria-label="API keys table">
        <table>
          <caption className="sr-only">Your API keys</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Key</th>
              <th scope="col">Scopes</th>
              <th scope="col">State</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {listed.map((key) => (
              <tr key={key.id}>
                <td>{key.name}</td>
                <td>
                  <code>{key.prefix}…</code>
                </td>
                <td>{key.scopes.join(", ")}</td>
                <td>{keyState(key)}</td>
                <td>
                  {!key.revoked_at && (
                    <button type="button" onClick={() => confirmRevoke(key)} aria-label={`Revoke ${key.name}`}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
            {listed.length === 0 && (
              <tr>
                <td colSpan={5} className="muted">
                  No keys yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </>
  );
}

function MyData() {
  const fetchAll = useWrite({ write: downloadMyData });
  return (
    <>
      <p className="muted">
        One zip file with your documents, every chat with its sources, the collections you own, your API keys' names
        and what the audit log records about you.
      </p>
      <button type="button" onClick={() => fetchAll.mutate()} disabled={fetchAll.isPending}>
        {fetchAll.isPending ? "Preparing…" : "Download everything"}
      </button>
      {fetchAll.isError && <p role="alert">Your data could not be downloaded. Try again.</p>}
    </>
  );
}

const DELETION_PLAN = ["account", "deletion"] as const;

/** Deleting the account: what goes, what others rely on (an administrator decides about
 * that), a confirmation with the email and password, and a waiting request to take back. */
function DeleteAccount({ user }: { user: User }) {
  const [open, setOpen] = useState(false);
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const dialog = useModalDialog(open);
  const plan = useQuery({
    queryKey: DELETION_PLAN,
    queryFn: async () => (await api.GET("/api/v1/users/me/deletion")).data ?? null,
  }).data;
  const request = useWrite({
    write: () =>
      unwrap(api.POST("/api/v1/users/me/deletion", { body: { confirm_email: email, password: password || null } }), "Your account could not be deleted"),
    onSuccess(outcome) {
      if (outcome.status === "deleted") {
        logout();
        return;
      }
      setOpen(false);
      // Only then: after a logout there is no plan to read.
      void queryClient.invalidateQueries({ queryKey: DELETION_PLAN });
    },
  });
  const takeBack = useWrite({
    write: () => unwrap(api.DELETE("/api/v1/users/me/deletion"), "Your request could not be taken back"),
    invalidates: [DELETION_PLAN],
    invalidateOnError: true,
  });
  if (!plan) return null;
  const reliedOn = plan.relied_on_documents.length + plan.relied_on_collections.length;
  const error = request.error ? failureText(request.error) : null;
  const working = request.isPending;

  function confirm(event: FormEvent) {
    event.preventDefault();
    request.mutate();
  }

  if (plan.deletion_requested_at) {
    return (
      <div className="notice" role="status">
        <p>
          You asked on {new Date(plan.deletion_requested_at).toLocaleDateString()} to delete your account. Others read{" "}
          {reliedOn.toLocaleString()} of your documents or collections, so an administrator decides what happens to them,
          then deletes it. Until then everything works as before.
        </p>
        <button type="button" onClick={() => takeBack.mutate()}>
          Keep my account
        </button>
        {takeBack.error && (
          <p role="alert" className="error small">
            {failureText(takeBack.error)}
          </p>
        )}
      </div>
    );
  }
  return (
    <>
      <p className="muted">
        Deleting your account removes {counted(plan.documents, "document")} and their files, {counted(plan.chats, "chat")},{" "}
        {counted(plan.api_keys, "API key")} and {counted(plan.collections_owned, "collection")} only you own. It cannot be
        undone: download your data first.
      </p>
      {reliedOn > 0 && (
        <p className="muted">
          Others read {plan.relied_on_documents.length.toLocaleString()} of your documents
          {plan.relied_on_collections.length > 0 && ` and ${counted(plan.relied_on_collections.length, "collection")} you own`}
          : an administrator will decide whether a colleague takes them over, and your account stays until then.
        </p>
      )}
      <button type="button" className="danger" onClick={() => { request.reset(); setOpen(true); }}>
        Delete account…
      </button>
      <dialog ref={dialog} aria-labelledby="delete-account-title" onClose={() => setOpen(false)}>
        <form onSubmit={confirm} className="stack">
          <h2 id="delete-account-title">Delete your account?</h2>
          <p className="small">
            {reliedOn > 0
              ? "Your request goes to an administrator, who decides about what others read; the rest is deleted with your account."
              : "Everything of yours is deleted now, and you are signed out."}
          </p>
          <label>
            Type your email ({user.email}) to confirm
            <input type="email" required autoComplete="off" value={email} onChange={(e) => setEmail(e.target.value)} />
          </label>
          <label>
            Password <span className="muted small">(none if you sign in through your organisation)</span>
            <input type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} />
          </label>
          {error && (
            <p role="alert" className="error small">
              {error}
            </p>
          )}
          <div className="row">
            <button type="submit" className="danger" disabled={working}>
              {reliedOn > 0 ? "Ask to delete my account" : "Delete my account"}
            </button>
            <button type="button" onClick={() => setOpen(false)}>
              Cancel
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}

export default function AccountPage({ user }: { user: User }) {
  return (
    <main className="admin">
      <section aria-labelledby="usage-title" className="card">
        <h2 id="usage-title">Your usage</h2>
        <Usage />
      </section>
      <section aria-labelledby="keys-title" className="card wide">
        <h2 id="keys-title">API keys</h2>
        <ApiKeys user={user} />
      </section>
      <section aria-labelledby="appearance-title" className="card">
        <h2 id="appearance-title">Appearance</h2>
        <p className="muted">Colours follow your system's light or dark setting unless you pick one here.</p>
        <ThemePicker className="theme-choice" />
      </section>
      <section aria-labelledby="password-title" className="card">
        <h2 id="password-title">Password</h2>
        <PasswordForm onChanged={() => undefined} />
      </section>
      <section aria-labelledby="data-title" className="card">
        <h2 id="data-title">Your data</h2>
        <MyData />
      </section>
      <section aria-labelledby="delete-title" className="card">
        <h2 id="delete-title">Delete account</h2>
        <DeleteAccount user={user} />
      </section>
    </main>
  );
}
