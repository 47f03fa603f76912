import { useCallback, useEffect, useState } from "react";
import { api, loadTokens, logout, onSessionEnd, redeemTicket, signInReturn, type User } from "./api/client";
import { queryClient, useInvitations } from "./api/queries";
import AuthPage from "./pages/AuthPage";
import ChatPage from "./pages/ChatPage";
import AdminPage from "./pages/AdminPage";
import AccountPage from "./pages/AccountPage";
import CollectionsPage from "./pages/CollectionsPage";
import ChangePasswordPage from "./pages/ChangePasswordPage";
import SharedChatPage from "./pages/SharedChatPage";
import { useRoute } from "./routes";
import ThemePicker from "./components/ThemePicker";
import { useOnline } from "./media";

/** "Collections", with the number of invitations waiting for an answer. */
function CollectionsButton({ open, onClick }: { open: boolean; onClick: () => void }) {
  const waiting = useInvitations(60_000).length;
  if (open) return <button onClick={onClick}>Back to chats</button>;
  const label = waiting ? `Collections, ${waiting} ${waiting === 1 ? "invitation" : "invitations"} waiting` : undefined;
  return (
    <button onClick={onClick} aria-label={label}>
      Collections{waiting > 0 && <span className="badge" aria-hidden="true">{waiting}</span>}
    </button>
  );
}

// Back from single sign-on: the ticket is traded once, whatever renders twice.
const returned = signInReturn();
const ticketTraded = returned && "ticket" in returned ? redeemTicket(returned.ticket) : null;

export default function App() {
  const [user, setUser] = useState<User | null>(null);
  const [checking, setChecking] = useState(Boolean(loadTokens()) || (returned !== null && "ticket" in returned));
  const [route, navigate] = useRoute();
  const [notice, setNotice] = useState<string | null>(returned && "error" in returned ? returned.error : null);

  const online = useOnline();
  // The server could not be reached to learn who is signed in (offline, or it is down).
  const [unreachable, setUnreachable] = useState(false);

  const loadUser = useCallback(async () => {
    try {
      const { data } = await api.GET("/api/v1/users/me");
      setUser(data ?? null);
      setUnreachable(false);
    } catch {
      setUnreachable(true);
    }
    setChecking(false);
  }, []);

  // Back online: try again by itself.
  useEffect(() => {
    if (online && unreachable) void loadUser();
  }, [online, unreachable, loadUser]);

  useEffect(() => {
    if (ticketTraded) {
      void ticketTraded.then((ok) => {
        if (ok) return loadUser();
        setNotice("That sign-in could not be completed (already used, expired, or the server could not be reached): sign in again.");
        setChecking(false);
      });
    } else if (loadTokens()) void loadUser();
    return onSessionEnd((why) => {
      queryClient.clear(); // nothing of this account is shown to the next one
      setUser(null); // the address stays: after logging in again, the same page opens
      setNotice(why === "ended" ? "Your session ended. Log in again to go on; an unsent message is kept in its chat." : null);
    });
  }, [loadUser]);

  if (checking) return <p className="loading">Loading…</p>;
  if (unreachable && !user) {
    return (
      <main className="offline-page">
        <h1>{online ? "docchat cannot be reached" : "You are offline"}</h1>
        <p>
          {online
            ? "The server did not answer. It may be restarting: try again in a moment."
            : "docchat needs the network to show your chats and documents. It opens by itself when the connection is back."}
        </p>
        <button className="primary" onClick={() => void loadUser()}>
          Try again
        </button>
      </main>
    );
  }
  if (!user) return <AuthPage notice={notice} onAuthenticated={loadUser} />;
  if (user.must_change_password) return <ChangePasswordPage email={user.email} onChanged={() => void loadUser()} onLogout={logout} />;
  const page = route.page === "admin" && user.role !== "admin" ? "chat" : route.page;
  const toggle = (target: "admin" | "account" | "collections") =>
    navigate(page === target ? { page: "chat", chatId: null } : { page: target });
  return (
    <div className="app">
      {page === "chat" && (
        <a
          className="skip-link"
          href="#composer"
          onClick={(event) => {
            event.preventDefault();
            document.getElementById("composer")?.focus();
          }}
        >
          Skip to the message box
        </a>
      )}
      <header className="topbar">
        <button className="brand" onClick={() => navigate({ page: "chat", chatId: null })}>
          docchat
        </button>
        <nav aria-label="Main">
          <ThemePicker />
          <CollectionsButton open={page === "collections"} onClick={() => toggle("collections")} />
          {user.role === "admin" && <button onClick={() => toggle("admin")}>{page === "admin" ? "Back to chats" : "Admin"}</button>}
          <button
            onClick={() => toggle("account")}
            title={user.email}
            aria-label={page === "account" ? undefined : `Account: ${user.email}`}
          >
            {page === "account" ? (
              "Back to chats"
            ) : (
              <>
                <span className="who">{user.email}</span>
                <span className="phone-only">Account</span>
              </>
            )}
          </button>
          <button onClick={logout}>Log out</button>
        </nav>
      </header>
      {!online && (
        <p role="status" className="offline-bar">
          You are offline. What you type stays here; an answer being written goes on on the server and shows when you are back.
        </p>
      )}
      {page === "admin" ? (
        <AdminPage currentUserId={user.id} />
      ) : page === "account" ? (
        <AccountPage user={user} />
      ) : page === "collections" ? (
        <CollectionsPage userId={user.id} isAdmin={user.role === "admin"} />
      ) : route.page === "shared" ? (
        <SharedChatPage shareId={route.shareId} />
      ) : (
        <ChatPage chatId={route.page === "chat" ? route.chatId : null} navigate={navigate} />
      )}
    </div>
  );
}
