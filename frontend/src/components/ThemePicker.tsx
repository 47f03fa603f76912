import { saveTheme, useThemeChoice, type ThemeChoice } from "../theme";

/** Light, dark, or the system's colours (kept in this browser). */
export default function ThemePicker({ className = "theme-picker" }: { className?: string }) {
  const choice = useThemeChoice();
  return (
    <select className={className} value={choice} aria-label="Colour theme" onChange={(event) => saveTheme(event.target.value as ThemeChoice)}>
      <option value="system">System theme</option>
      <option value="light">Light</option>
      <option value="dark">Dark</option>
    </select>
  );
}
