import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

// The build goes to dist/, which is committed and embedded in the relay binary
// (web/embed.go). `npm run dev` proxies the API to a relay serve on :3080.
export default defineConfig({
  plugins: [svelte()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsDir: 'assets',
    // dist/.vite/manifest.json says which files each page loads (go run ./bench ui).
    manifest: true,
    // Relay sends a Content-Security-Policy without inline scripts.
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 600,
  },
  server: {
    proxy: {
      '/api': 'http://127.0.0.1:3080',
      '/v1': 'http://127.0.0.1:3080',
    },
  },
});
