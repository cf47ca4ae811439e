/* SPDX-License-Identifier: MIT */
#pragma once

/* MESSAGE_IDs of lifecycle and decision events; each is explained in docs/elastic-pool.catalog
 * (installed for journalctl -x). Never change an id once released. */

#define MESSAGE_ID_SPAWN "1045b7762677ff20e258885a8cee1db7"        /* a worker was started */
#define MESSAGE_ID_READY "a11528c41bc38886ed94743ed398eea8"        /* a worker became routable */
#define MESSAGE_ID_DEATH "97bd251d5493ef9d634bb4a29fedc2c9"        /* a worker died (cause in the message) */
#define MESSAGE_ID_SPAWN_FAILED "d35ffe57009b4828cd1d3b7c43d56798" /* exec failed / died before ready */
#define MESSAGE_ID_SPAWN_GAVE_UP "b93b3354577215ee0bdcf0d26dc1138b" /* the spawn throttle stopped trying */
#define MESSAGE_ID_SCALE_UP "72404e9a66cbabd913229ca2875e5059"     /* scale-up decided a spawn */
#define MESSAGE_ID_COMPACT "b01ea878e4b2f16dc97c162d00f6d6b6"      /* the ledger decided to compact */
#define MESSAGE_ID_RETIRE "4da5c1c6e54ee5cdc715bac74cd9bf73"       /* a worker is being retired */
#define MESSAGE_ID_HELD "b18ac20b8bbf25796b502190b836e46f"         /* a decision is held (missing data) */
#define MESSAGE_ID_REFUSED "5c4876f1de50b08cf0d0dcb7d5f987d9"      /* a needed spawn was refused */
#define MESSAGE_ID_CHANNEL_CLOSED "4725dde6c97d90a48595306861877474" /* a worker's channel was closed */
#define MESSAGE_ID_CHANNEL_REFUSED "40d4632e97244e1282d7a8de67ab055c" /* a non-worker knocked on channel.sock */
#define MESSAGE_ID_ADOPT "5d4660f3e39f433c821d766f4260b6e3"        /* a worker of an earlier commander was taken back */
#define MESSAGE_ID_STOP "f6e7f9fcfd9f9e51bf9b07015f0b588e"         /* the commander is stopping */
#define MESSAGE_ID_PLACE "f1494a3e59650bf20abb44b2fe595a22"        /* a user was placed on a worker */
#define MESSAGE_ID_MOVE "06113336199275f13a3bf8c2c08918bf"         /* a user moved between workers */
#define MESSAGE_ID_RELOAD "a609008ad66749159ecfff1d2e8377c8"       /* the configuration was reloaded, or not */
#define MESSAGE_ID_DRIFT "d6906896e57d4ac0a60b8f10f79d1caf"        /* a register count drifted from the commander's */
