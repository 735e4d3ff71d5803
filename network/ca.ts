/**
 * The per-runtime certificate authority of the egress: made in memory when
 * the proxy starts (an ECDSA P-256 key on WebCrypto, certificates built by
 * `@peculiar/x509`), it signs one short-lived certificate per intercepted
 * host. Its key never leaves the process; only its certificate goes into the
 * sandbox.
 *
 * @module
 */
import type * as X509 from "@peculiar/x509";
import { isIPv4, isIPv6 } from "./policy.ts";

let loading: Promise<typeof X509> | undefined;

/**
 * `@peculiar/x509`, loaded by the first authority. Since 2.x it leaves the
 * Reflect metadata polyfill that its dependency injection (tsyringe) needs to
 * the application instead of importing `reflect-metadata` itself: it is
 * installed here, only when a certificate authority is made (egress
 * interception), never by importing skillrun.
 */
function loadX509(): Promise<typeof X509> {
  loading ??= (async () => {
    await import("reflect-metadata");
    return await import("@peculiar/x509");
  })();
  return loading;
}

const ALGORITHM = {
  name: "ECDSA",
  namedCurve: "P-256",
  hash: "SHA-256",
} as const;

/** A certificate and its private key, both PEM. */
export interface IssuedCertificate {
  /** The certificate chain (leaf, then the authority). */
  readonly cert: string;
  /** The leaf's private key (PKCS #8). */
  readonly key: string;
}

function serial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0]! &= 0x7f; // positive
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function pem(label: string, der: ArrayBuffer): string {
  const b64 = btoa(String.fromCharCode(...new Uint8Array(der)));
  return `-----BEGIN ${label}-----\n${
    b64.match(/.{1,64}/g)!.join("\n")
  }\n-----END ${label}-----\n`;
}

/**
 * A certificate authority made in memory.
 *
 * @example Issuing a certificate for a host
 * ```ts
 * import { assert } from "@std/assert";
 * import { CertificateAuthority } from "./ca.ts";
 * const ca = await CertificateAuthority.create();
 * const issued = await ca.issue("api.example.com");
 * assert(ca.certificate.startsWith("-----BEGIN CERTIFICATE-----"));
 * assert(issued.key.includes("PRIVATE KEY"));
 * ```
 */
export class CertificateAuthority {
  /** The authority's certificate, PEM: what the sandbox trusts. */
  readonly certificate: string;
  readonly #cert: X509.X509Certificate;
  readonly #keys: CryptoKeyPair;
  readonly #issued = new Map<string, Promise<IssuedCertificate>>();

  private constructor(cert: X509.X509Certificate, keys: CryptoKeyPair) {
    this.#cert = cert;
    this.#keys = keys;
    this.certificate = cert.toString("pem") + "\n";
  }

  /**
   * Makes a new authority, valid for 10 days.
   *
   * @param name The common name. Default `skillrun egress CA <random>`.
   * @returns The authority.
   */
  static async create(name?: string): Promise<CertificateAuthority> {
    const x509 = await loadX509();
    const keys = await crypto.subtle.generateKey(ALGORITHM, false, [
      "sign",
      "verify",
    ]) as CryptoKeyPair;
    const now = Date.now();
    const cn = name ??
      `skillrun egress CA ${crypto.randomUUID().slice(0, 8)}`;
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: [{ CN: [cn] }, { O: ["skillrun"] }],
      notBefore: new Date(now - 3600_000),
      notAfter: new Date(now + 10 * 86400_000),
      signingAlgorithm: ALGORITHM,
      keys,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign,
          true,
        ),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    }, crypto);
    return new CertificateAuthority(cert, keys);
  }

  /**
   * A certificate for one host (made once, then reused), valid for 10 days.
   *
   * @param host A host name or IP address.
   * @returns The chain and the key, PEM.
   */
  issue(host: string): Promise<IssuedCertificate> {
    let issued = this.#issued.get(host);
    if (!issued) {
      issued = this.#make(host);
      this.#issued.set(host, issued);
    }
    return issued;
  }

  async #make(host: string): Promise<IssuedCertificate> {
    const x509 = await loadX509();
    const keys = await crypto.subtle.generateKey(ALGORITHM, true, [
      "sign",
      "verify",
    ]) as CryptoKeyPair;
    const now = Date.now();
    const ip = isIPv4(host) || isIPv6(host);
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: [{ CN: [host] }],
      issuer: this.#cert.subject,
      notBefore: new Date(now - 3600_000),
      notAfter: new Date(now + 10 * 86400_000),
      signingAlgorithm: ALGORITHM,
      publicKey: keys.publicKey,
      signingKey: this.#keys.privateKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.digitalSignature,
          true,
        ),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([
          ip ? { type: "ip", value: host } : { type: "dns", value: host },
        ]),
        await x509.AuthorityKeyIdentifierExtension.create(this.#cert),
      ],
    }, crypto);
    const key = await crypto.subtle.exportKey("pkcs8", keys.privateKey);
    return {
      cert: cert.toString("pem") + "\n" + this.certificate,
      key: pem("PRIVATE KEY", key),
    };
  }
}
