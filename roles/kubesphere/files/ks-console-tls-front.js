// The console's TLS front (slipway.cluster, kubesphere role): runs beside ks-console in its pod, with the console
// image's own Node.js, and serves TLS on KS_CONSOLE_TLS_PORT (8443) with the certificate and key of the Secret mounted
// at KS_CONSOLE_TLS_DIR (tls.crt, tls.key). Each connection is passed as it is to the console on 127.0.0.1 at
// KS_CONSOLE_HTTP_PORT (8000): HTTP and the console's WebSockets alike. The files are read again every
// KS_CONSOLE_TLS_RELOAD_SECONDS (60), so a renewed certificate is served without a restart.
'use strict'

const fs = require('fs')
const net = require('net')
const path = require('path')
const tls = require('tls')

const dir = process.env.KS_CONSOLE_TLS_DIR || '/etc/ks-console-tls'
const port = Number(process.env.KS_CONSOLE_TLS_PORT || 8443)
const upstream = Number(process.env.KS_CONSOLE_HTTP_PORT || 8000)
const reload = Number(process.env.KS_CONSOLE_TLS_RELOAD_SECONDS || 60) * 1000

function read() {
  return { cert: fs.readFileSync(path.join(dir, 'tls.crt')), key: fs.readFileSync(path.join(dir, 'tls.key')) }
}

let files = read()
const server = tls.createServer({ ...files, minVersion: 'TLSv1.2' }, client => {
  const console_ = net.connect(upstream, '127.0.0.1')
  client.on('error', () => console_.destroy())
  console_.on('error', () => client.destroy())
  client.pipe(console_).pipe(client)
})
server.on('tlsClientError', () => {})

setInterval(() => {
  try {
    const now = read()
    if (!now.cert.equals(files.cert) || !now.key.equals(files.key)) {
      server.setSecureContext({ ...now, minVersion: 'TLSv1.2' })
      files = now
      process.stdout.write('ks-console TLS front: serving the renewed certificate\n')
    }
  } catch (error) {
    process.stderr.write(`ks-console TLS front: keeping the certificate served, ${dir} unreadable: ${error.message}\n`)
  }
}, reload).unref()

server.listen(port, () => process.stdout.write(`ks-console TLS front: TLS on port ${port}, to 127.0.0.1:${upstream}\n`))
