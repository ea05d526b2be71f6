// @peculiar/x509 resolves its algorithms through tsyringe, which refuses to load unless the Reflect metadata API
// exists: import this module before anything that imports @peculiar/x509.
import 'reflect-metadata';
