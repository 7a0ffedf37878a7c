/**
 * A test SHAKEN PKI made by the `openssl` command (an implementation independent of ours): an
 * STI-CA root and intermediate, end-entity certificates of every kind the checks must tell
 * apart, a CRL revoking one of them, and a TLS root with a certificate for 127.0.0.1 so the
 * x5u server in the tests speaks https as real ones do.
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export type LeafKind = 'spc' | 'range' | 'noTnAuth' | 'badTnAuth' | 'expired' | 'wrongCurve' | 'caTrue' | 'revoked' | 'untrusted' | 'noDigitalSignature'
  | 'pastPathLen' | 'spcUnderRangeCa' | 'rangeUnderRangeCa' | 'noPolicy' | 'otherPolicy' | 'underNoPolicyCa'

export interface TestLeaf {
  /** PEM private key (SEC1 EC). */
  key: string
  cert: string
  /** Leaf then its issuing intermediate, as an x5u document serves it. */
  bundle: string
}

export interface ShakenPki {
  dir: string
  root: string
  intermediate: string
  leaves: Record<LeafKind, TestLeaf>
  /** The intermediate's CRL (DER), revoking the `revoked` leaf. */
  crl: Buffer
  /** The same revocations in a CRL signed by `crlSigner`, as the STI-PA's is: a certificate that is not a CA. */
  indirectCrl: Buffer
  /** A non-CA certificate (issued by the root) that signs `indirectCrl`. */
  crlSigner: string
  tls: { ca: string; cert: string; key: string }
  cleanup(): void
}

export const TEST_SPC = '1234'
/** The SHAKEN certificate policy (CP 1.3) the test STI-CA puts in its certificates. */
export const SHAKEN_POLICY = '2.16.840.1.114569.1.1.3'

/** The range the `range` leaf authorises: 100 numbers from +1 202 555 0100. */
export const TEST_RANGE = { start: '12025550100', count: 100 }

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
}

const LEAF_EXTENSIONS = (crlUrl: string, tnAuth: string | null, extra = '') => `basicConstraints=critical,CA:FALSE
keyUsage=critical,${extra === 'noDigitalSignature' ? 'keyAgreement' : 'digitalSignature'}
${extra === 'noPolicy' ? '' : `certificatePolicies=${extra === 'otherPolicy' ? '1.3.6.1.4.1.99999.1' : SHAKEN_POLICY}`}
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
crlDistributionPoints=URI:${crlUrl}
${tnAuth === null ? '' : `1.3.6.1.5.5.7.1.26=ASN1:SEQUENCE:${tnAuth}`}
`

export function makeShakenPki(options: { crlUrl: string }): ShakenPki {
  const dir = mkdtempSync(join(tmpdir(), 'kns-pki-'))
  mkdirSync(join(dir, 'newcerts'))
  writeFileSync(join(dir, 'index.txt'), '')
  // Serials whose first byte is below 0x10 (0A01, ...): a leading zero digit that node:crypto keeps and DER does not.
  writeFileSync(join(dir, 'serial'), '0A00\n')
  writeFileSync(join(dir, 'crlnumber'), '01\n')
  const leafSections = (name: string, tnAuth: string | null, extra = '') => `[${name}]\n${LEAF_EXTENSIONS(options.crlUrl, tnAuth, extra)}`
  writeFileSync(join(dir, 'ca.cnf'), `[ca]
default_ca = inter
[inter]
dir = ${dir}
database = $dir/index.txt
serial = $dir/serial
crlnumber = $dir/crlnumber
certificate = $dir/inter.pem
private_key = $dir/inter.key
new_certs_dir = $dir/newcerts
default_md = sha256
policy = policy_any
default_days = 365
default_crl_days = 7
unique_subject = no
[policy_any]
commonName = supplied
organizationName = optional
countryName = optional
[req]
distinguished_name = dn
[dn]
[v3_root]
basicConstraints=critical,CA:TRUE
keyUsage=critical,keyCertSign,cRLSign
subjectKeyIdentifier=hash
[v3_inter]
basicConstraints=critical,CA:TRUE,pathlen:0
keyUsage=critical,keyCertSign,cRLSign
certificatePolicies=${SHAKEN_POLICY}
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
[v3_tls]
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1
${leafSections('leaf_spc', 'tn_spc')}
${leafSections('leaf_range', 'tn_range_list')}
${leafSections('leaf_none', null)}
${leafSections('leaf_bad', 'tn_bad')}
${leafSections('leaf_no_ds', 'tn_spc', 'noDigitalSignature')}
${leafSections('leaf_no_policy', 'tn_spc', 'noPolicy')}
${leafSections('leaf_other_policy', 'tn_spc', 'otherPolicy')}
[crlsigner]
dir = ${dir}
database = $dir/index.txt
crlnumber = $dir/crlnumber
certificate = $dir/crlSigner.pem
private_key = $dir/crlSigner.key
default_md = sha256
default_crl_days = 7
[v3_crl_signer]
basicConstraints=critical,CA:FALSE
keyUsage=critical,cRLSign,digitalSignature
subjectKeyIdentifier=hash
[v3_inter_no_policy]
basicConstraints=critical,CA:TRUE,pathlen:0
keyUsage=critical,keyCertSign,cRLSign
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
[v3_sub]
basicConstraints=critical,CA:TRUE
keyUsage=critical,keyCertSign,cRLSign
certificatePolicies=${SHAKEN_POLICY}
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
[v3_range_ca]
basicConstraints=critical,CA:TRUE,pathlen:0
keyUsage=critical,keyCertSign,cRLSign
certificatePolicies=${SHAKEN_POLICY}
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
1.3.6.1.5.5.7.1.26=ASN1:SEQUENCE:tn_range_list
[tn_sub_range_list]
range=EXP:1,SEQUENCE:tn_sub_range
[tn_sub_range]
start=IA5:12025550140
count=INT:10
${leafSections('leaf_sub_range', 'tn_sub_range_list')}
[leaf_ca]
basicConstraints=critical,CA:TRUE
keyUsage=critical,digitalSignature,keyCertSign
1.3.6.1.5.5.7.1.26=ASN1:SEQUENCE:tn_spc
[tn_spc]
spc=EXP:0,IA5:${TEST_SPC}
[tn_range_list]
range=EXP:1,SEQUENCE:tn_range
[tn_range]
start=IA5:${TEST_RANGE.start}
count=INT:${TEST_RANGE.count}
[tn_bad]
junk=EXP:7,IA5:nope
`)
  const cnf = join(dir, 'ca.cnf')
  const key = (name: string, curve = 'prime256v1') => openssl(dir, ['ecparam', '-name', curve, '-genkey', '-noout', '-out', `${name}.key`])
  const selfSigned = (name: string, subject: string, ext: string) => {
    key(name)
    openssl(dir, ['req', '-x509', '-new', '-key', `${name}.key`, '-subj', subject, '-days', '3650', '-sha256', '-config', cnf, '-extensions', ext, '-out', `${name}.pem`])
  }
  const signedBy = (name: string, subject: string, issuer: string, ext: string, curve?: string) => {
    key(name, curve)
    openssl(dir, ['req', '-new', '-key', `${name}.key`, '-subj', subject, '-config', cnf, '-out', `${name}.csr`])
    openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${issuer}.pem`, '-CAkey', `${issuer}.key`, '-CAcreateserial', '-days', '365',
      '-sha256', '-extfile', cnf, '-extensions', ext, '-out', `${name}.pem`])
  }
  const leafFromCa = (name: string, ext: string, dates: string[] = [], curve?: string) => {
    key(name, curve)
    openssl(dir, ['req', '-new', '-key', `${name}.key`, '-subj', `/C=US/O=KNS Test Carrier/CN=SHAKEN ${name}`, '-config', cnf, '-out', `${name}.csr`])
    openssl(dir, ['ca', '-batch', '-config', cnf, '-in', `${name}.csr`, '-out', `${name}.pem`, '-extensions', ext, '-notext', ...dates])
  }

  selfSigned('root', '/C=US/O=KNS Test STI-CA/CN=KNS Test STI Root', 'v3_root')
  signedBy('inter', '/C=US/O=KNS Test STI-CA/CN=KNS Test STI Intermediate', 'root', 'v3_inter')
  leafFromCa('spc', 'leaf_spc')
  leafFromCa('range', 'leaf_range')
  leafFromCa('noTnAuth', 'leaf_none')
  leafFromCa('badTnAuth', 'leaf_bad')
  leafFromCa('expired', 'leaf_spc', ['-startdate', '20200101000000Z', '-enddate', '20210101000000Z'])
  leafFromCa('wrongCurve', 'leaf_spc', [], 'secp384r1')
  leafFromCa('caTrue', 'leaf_ca')
  leafFromCa('revoked', 'leaf_spc')
  leafFromCa('noDigitalSignature', 'leaf_no_ds')
  leafFromCa('noPolicy', 'leaf_no_policy')
  leafFromCa('otherPolicy', 'leaf_other_policy')
  // An intermediate without the policy: its leaf (which has it) must not pass under enforce.
  signedBy('noPolicyCa', '/C=US/O=KNS Test STI-CA/CN=Intermediate without policy', 'root', 'v3_inter_no_policy')
  signedBy('underNoPolicyCa', '/C=US/O=KNS Test Carrier/CN=SHAKEN under no-policy CA', 'noPolicyCa', 'leaf_spc')
  // A CA below the intermediate, whose pathlen:0 allows none: its leaf must not pass.
  signedBy('subCa', '/C=US/O=KNS Test Carrier/CN=Sub CA', 'inter', 'v3_sub')
  signedBy('pastPathLen', '/C=US/O=KNS Test Carrier/CN=SHAKEN past pathlen', 'subCa', 'leaf_spc')
  // A delegate CA limited to a TN range (RFC 9060): an SPC leaf under it claims too much.
  signedBy('rangeCa', '/C=US/O=KNS Test Carrier/CN=Range CA', 'root', 'v3_range_ca')
  signedBy('spcUnderRangeCa', '/C=US/O=KNS Test Carrier/CN=SHAKEN spc under range', 'rangeCa', 'leaf_spc')
  signedBy('rangeUnderRangeCa', '/C=US/O=KNS Test Carrier/CN=SHAKEN sub-range', 'rangeCa', 'leaf_sub_range')
  openssl(dir, ['ca', '-batch', '-config', cnf, '-revoke', 'revoked.pem'])
  openssl(dir, ['ca', '-batch', '-config', cnf, '-gencrl', '-out', 'crl.pem'])
  openssl(dir, ['crl', '-in', 'crl.pem', '-outform', 'DER', '-out', 'crl.der'])
  // The STI-PA's way: one CRL signed by a certificate that is not a CA.
  signedBy('crlSigner', '/C=US/O=KNS Test STI-PA/CN=KNS Test STI-PA CRL Signer', 'root', 'v3_crl_signer')
  openssl(dir, ['ca', '-batch', '-config', cnf, '-name', 'crlsigner', '-gencrl', '-out', 'indirect-crl.pem'])
  openssl(dir, ['crl', '-in', 'indirect-crl.pem', '-outform', 'DER', '-out', 'indirect-crl.der'])
  // Signed by a CA no one trusts.
  selfSigned('rogue', '/C=US/O=Rogue CA/CN=Rogue Root', 'v3_root')
  signedBy('untrusted', '/C=US/O=Rogue Carrier/CN=SHAKEN untrusted', 'rogue', 'leaf_spc')
  // TLS for the x5u server on 127.0.0.1.
  selfSigned('tlsroot', '/CN=KNS Test TLS Root', 'v3_root')
  signedBy('tls', '/CN=127.0.0.1', 'tlsroot', 'v3_tls')

  const read = (file: string) => readFileSync(join(dir, file), 'utf8')
  const inter = read('inter.pem')
  const leaf = (name: string, issuer = inter): TestLeaf => ({ key: read(`${name}.key`), cert: read(`${name}.pem`), bundle: read(`${name}.pem`) + issuer })
  return {
    dir,
    root: read('root.pem'),
    intermediate: inter,
    leaves: {
      spc: leaf('spc'), range: leaf('range'), noTnAuth: leaf('noTnAuth'), badTnAuth: leaf('badTnAuth'), expired: leaf('expired'),
      wrongCurve: leaf('wrongCurve'), caTrue: leaf('caTrue'), revoked: leaf('revoked'), untrusted: leaf('untrusted', read('rogue.pem')),
      noDigitalSignature: leaf('noDigitalSignature'),
      pastPathLen: leaf('pastPathLen', read('subCa.pem') + inter),
      spcUnderRangeCa: leaf('spcUnderRangeCa', read('rangeCa.pem')),
      rangeUnderRangeCa: leaf('rangeUnderRangeCa', read('rangeCa.pem')),
      noPolicy: leaf('noPolicy'), otherPolicy: leaf('otherPolicy'),
      underNoPolicyCa: leaf('underNoPolicyCa', read('noPolicyCa.pem')),
    },
    crl: readFileSync(join(dir, 'crl.der')),
    indirectCrl: readFileSync(join(dir, 'indirect-crl.der')),
    crlSigner: read('crlSigner.pem'),
    tls: { ca: read('tlsroot.pem'), cert: read('tls.pem'), key: read('tls.key') },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  }
}
